// What each member role reaches of the operator account routes (docs/console.md "Roles"): ONE
// table of route patterns (relative to /admin/v1/accounts/:id) and methods → the least role.
// A route no row matches is closed to every session (default deny): a new route stays closed to
// members until it is listed here. The operator token is not subject to this table.
import type { Role } from '../members/service.js';

type Methods = 'GET' | 'WRITE' | 'DELETE' | '*';
/** [methods, pattern, least role]; a pattern ending in `/**` covers its area and everything under it. */
type Rule = readonly [Methods, string, Role];

export const ROLE_RULES: readonly Rule[] = [
  // The account itself: name, plan, usage (reading only; plan and limits are the operator's).
  ['GET', '', 'agent'],
  // Members: admins and owners; only an owner touches an owner or names one (members/service.ts,
  // decisions.md "Admins manage members, not owners").
  ['*', '/members/**', 'admin'],
  // The inbox: conversations (replies, notes), contacts, cases' stage, reason, outcome and close.
  ['*', '/conversations/**', 'agent'],
  // Contacts: agents search and edit them; importing and exporting the whole list is an admin's
  // (docs/decisions.md "Contact import and export are admins'").
  ['*', '/contacts/imports/**', 'admin'],
  ['GET', '/contacts/export', 'admin'],
  // Erasing or exporting one person (docs/privacy.md) is an owner's or an admin's.
  ['GET', '/contacts/:contactId/export', 'admin'],
  ['DELETE', '/contacts/:contactId', 'admin'],
  ['*', '/contacts/**', 'agent'],
  ['GET', '/cases/**', 'agent'],
  ['WRITE', '/cases/:caseId/stage', 'agent'],
  ['WRITE', '/cases/:caseId/reason', 'agent'],
  ['WRITE', '/cases/:caseId/outcome', 'agent'],
  ['WRITE', '/cases/:caseId/close', 'agent'],
  // Read by agents, changed by admins.
  ['GET', '/templates/**', 'agent'],
  ['GET', '/pipelines/**', 'agent'],
  ['GET', '/campaigns/**', 'agent'],
  ['GET', '/reasons/**', 'agent'],
  ['*', '/templates/**', 'admin'],
  ['*', '/pipelines/**', 'admin'],
  ['*', '/campaigns/**', 'admin'],
  ['*', '/reasons/**', 'admin'],
  // Configuration: admins and owners.
  ['*', '/keys/**', 'admin'],
  ['*', '/webhooks/**', 'admin'],
  ['*', '/phone-numbers/**', 'admin'],
  ['*', '/social-accounts/**', 'admin'],
  ['*', '/ai-apps/**', 'admin'],
  ['*', '/automations/**', 'admin'],
  ['*', '/agents/**', 'admin'],
  // The audit trail: owners only (docs/privacy.md "Audit trail").
  ['GET', '/audit', 'owner'],
];

const RANK: Record<Role, number> = { agent: 0, admin: 1, owner: 2 };

function matches(pattern: string, path: string): boolean {
  if (!pattern.endsWith('/**')) return pattern === path;
  const base = pattern.slice(0, -3);
  return path === base || path.startsWith(`${base}/`);
}

/** The least role for `method` on `path` (the route pattern after /accounts/:id), or null: closed to sessions. */
export function leastRole(method: string, path: string): Role | null {
  const write = !['GET', 'HEAD'].includes(method);
  for (const [methods, pattern, role] of ROLE_RULES) {
    if (methods === 'GET' && write) continue;
    if (methods === 'WRITE' && !write) continue;
    if (methods === 'DELETE' && method !== 'DELETE') continue;
    if (matches(pattern, path)) return role;
  }
  return null;
}

export const roleAllows = (role: Role, least: Role | null): boolean => least !== null && RANK[role] >= RANK[least];
