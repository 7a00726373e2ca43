// The audit trail (docs/privacy.md "Audit trail"): one append-only line per security-relevant
// action, written by `audit()` in the transaction of the action itself, so an action and its line
// commit together or not at all. A line says who (the actor), what (the action and its target),
// from where (the request id and IP) and a small JSON of what changed — never a secret, never
// message text, never a person's data beyond ids.
import type { FastifyRequest } from 'fastify';
import type { Executor } from '../db/index.js';
import { newId } from '../lib/ids.js';

/** Every action the trail records (privacy.md's list). Adding one: here, docs/privacy.md, the OpenAPI enum. */
export const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.revoked',
  'ai_app.connected',
  'ai_app.disconnected',
  'webhook.created',
  'webhook.updated',
  'webhook.secret_rotated',
  'webhook.deleted',
  'phone_number.connected',
  'phone_number.updated',
  'social_account.connected',
  'social_account.updated',
  'social_account.deleted',
  'member.invited',
  'member.added',
  'member.updated',
  'member.disabled',
  'member.removed',
  'login.succeeded',
  'login.failed',
  'account.plan_changed',
  'account.limits_changed',
  'secrets.rotated',
  'contact.erased',
  'contact.exported',
  'dead_letter.retried',
  'dead_letter.discarded',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type ActorType = 'operator' | 'member' | 'api_key' | 'ai_app' | 'system';

/** Who acts. `id` and `name` are null for the operator token and the system. */
export interface AuditActor {
  type: ActorType;
  id: string | null;
  name: string | null;
}

/** Who acts and from where: the actor plus the request that carried the action (null outside a request). */
export interface AuditWho {
  actor: AuditActor;
  requestId: string | null;
  ip: string | null;
}

export interface AuditEntry {
  /** The account the action belongs to; null for actions on the whole installation (secrets.rotated). */
  accountId: string | null;
  action: AuditAction;
  target?: { type: string; id: string } | null;
  /** What changed: field names and non-secret values (a role, a URL's host, a count). */
  changes?: Record<string, unknown>;
}

/**
 * The fields of `after` that differ from `before`, each as {from, to} (a line's `changes`). Only
 * the keys listed: a caller names what may be shown, so a secret never slips in by a new column.
 */
export function fromTo<T extends Record<string, unknown>>(before: T, after: Partial<T>, keys: readonly (keyof T & string)[]) {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of keys) {
    if (after[k] === undefined) continue;
    if (JSON.stringify(before[k] ?? null) !== JSON.stringify(after[k] ?? null)) out[k] = { from: before[k] ?? null, to: after[k] ?? null };
  }
  return out;
}

export const SYSTEM: AuditWho = { actor: { type: 'system', id: null, name: null }, requestId: null, ip: null };

/**
 * Who does what a request asks: a console member (their session), else whoever the request's
 * door authenticated — the operator token on /admin, an API key or an AI app elsewhere (pass it).
 */
export function whoOf(req: FastifyRequest, actor?: AuditActor): AuditWho {
  const member = req.session?.member;
  const a: AuditActor =
    actor ?? (member ? { type: 'member', id: member.id, name: member.name } : { type: 'operator', id: null, name: null });
  return { actor: a, requestId: String(req.id), ip: req.ip ?? null };
}

/** Writes one line at `at` (the services' clock). Call it with the action's transaction, never after the commit. */
export async function audit(db: Executor, at: Date, who: AuditWho, e: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: newId(),
      account_id: e.accountId,
      at,
      actor_type: who.actor.type,
      actor_id: who.actor.id,
      actor_name: who.actor.name,
      action: e.action,
      target_type: e.target?.type ?? null,
      target_id: e.target?.id ?? null,
      request_id: who.requestId,
      ip: who.ip,
      changes: JSON.stringify(e.changes ?? {}),
    })
    .execute();
}
