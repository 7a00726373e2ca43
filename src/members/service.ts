// Members of an account (docs/console.md "Members"): add with a password or a one-use invite,
// list, change name/role/status, remove. An account always keeps an active owner; disabling or
// removing a member ends their sessions at once (their rows go with them). Who acts matters: the
// operator and owners manage everyone; an admin manages members but never an owner, nor names one
// (403 owner_only; decisions.md "Admins manage members, not owners").
import { createHash, randomBytes } from 'node:crypto';
import { type AuditWho, audit, fromTo } from '../audit/trail.js';
import type { Executor } from '../db/index.js';
import type { AccountRow, MemberRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { iso } from '../http/schemas.js';
import { newId } from '../lib/ids.js';
import type { Services } from '../services.js';
import { hashPassword } from './password.js';

export type Role = MemberRow['role'];
export const ROLES = ['owner', 'admin', 'agent'] as const;
export const INVITE_TTL_MS = 7 * 24 * 3600_000;

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
export const randomToken = (): string => randomBytes(32).toString('base64url');

export const memberView = (m: MemberRow) => ({
  id: m.id,
  email: m.email,
  name: m.name,
  role: m.role,
  status: m.status,
  createdAt: iso(m.created_at) as string,
  lastSeenAt: iso(m.last_seen_at),
});
export type MemberView = ReturnType<typeof memberView>;

/** Who changes the members: the operator (null) or a member's role through a console session. */
export type Actor = Role | null;

/** An admin neither touches an owner nor makes anyone one; the operator and owners do both. */
function mayManage(actor: Actor, target: Role | null, newRole: Role | undefined): void {
  if (actor === null || actor === 'owner') return;
  if (target === 'owner' || newRole === 'owner') throw new ApiError('owner_only');
}

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === '23505';

/** A new invite link for the member; only the token's sha256 is stored. */
async function invite(s: Services, db: Executor, memberId: string): Promise<string> {
  const token = randomToken();
  await db
    .insertInto('member_invites')
    .values({ token_hash: sha256(token), member_id: memberId, expires_at: new Date(s.clock.ms() + INVITE_TTL_MS) })
    .execute();
  return `${s.publicUrl.replace(/\/$/, '')}/console/invite/${token}`;
}

export interface NewMember {
  email: string;
  name?: string | undefined;
  role: Role;
  password?: string | undefined;
}

const target = (id: string) => ({ type: 'member', id });

/** Adds a member: audited as member.added (with a password) or member.invited. */
export async function addMember(
  s: Services,
  account: AccountRow,
  m: NewMember,
  actor: Actor,
  who: AuditWho,
): Promise<{ member: MemberView; inviteUrl: string | null }> {
  mayManage(actor, null, m.role);
  const email = m.email.trim().toLowerCase();
  const passwordHash = m.password === undefined ? null : await hashPassword(m.password);
  try {
    return await s.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('members')
        .values({
          id: newId(),
          account_id: account.id,
          email,
          name: m.name?.trim() || email.split('@')[0],
          role: m.role,
          status: passwordHash ? 'active' : 'invited',
          password_hash: passwordHash,
          created_at: s.clock.now(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const inviteUrl = passwordHash ? null : await invite(s, trx, row.id);
      const action = passwordHash ? 'member.added' : 'member.invited';
      await audit(trx, row.created_at, who, { accountId: account.id, action, target: target(row.id), changes: { role: row.role } });
      return { member: memberView(row), inviteUrl };
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ApiError('member_email_taken');
    throw err;
  }
}

export const listMembers = (db: Executor, accountId: string): Promise<MemberRow[]> =>
  db.selectFrom('members').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();

export async function getMember(db: Executor, accountId: string, memberId: string): Promise<MemberRow> {
  const m = await db.selectFrom('members').selectAll().where('id', '=', memberId).where('account_id', '=', accountId).executeTakeFirst();
  if (!m) throw new ApiError('member_not_found');
  return m;
}

/** Refuses when, after this change, the account would have no active owner (the account row is locked meanwhile). */
async function keepAnOwner(trx: Executor, accountId: string, member: MemberRow, after: { role: Role; status: string } | null) {
  if (member.role !== 'owner' || member.status !== 'active') return;
  if (after && after.role === 'owner' && after.status === 'active') return;
  const others = await trx
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .where('status', '=', 'active')
    .where('id', '<>', member.id)
    .executeTakeFirstOrThrow();
  if (Number(others.n) === 0) throw new ApiError('last_owner');
}

export interface MemberChange {
  name?: string | undefined;
  role?: Role | undefined;
  status?: 'active' | 'disabled' | undefined;
}

export async function updateMember(
  s: Services,
  accountId: string,
  memberId: string,
  c: MemberChange,
  actor: Actor,
  who: AuditWho,
): Promise<MemberView> {
  return s.db.transaction().execute(async (trx) => {
    await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
    const m = await getMember(trx, accountId, memberId);
    mayManage(actor, m.role, c.role);
    // A member without a password becomes active by choosing one (the invite), not by the operator:
    // activating an invited member, or a disabled one who never chose a password, leaves it invited.
    const status = c.status === 'active' && m.password_hash === null ? 'invited' : (c.status ?? m.status);
    const role = c.role ?? m.role;
    await keepAnOwner(trx, accountId, m, { role, status });
    const row = await trx
      .updateTable('members')
      .set({ name: c.name?.trim() || m.name, role, status })
      .where('id', '=', m.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (status === 'disabled') await trx.deleteFrom('member_sessions').where('member_id', '=', m.id).execute();
    // Disabling is its own action (it ends their sessions); any other change is member.updated.
    const action = status === 'disabled' && m.status !== 'disabled' ? 'member.disabled' : 'member.updated';
    const changes = fromTo({ name: m.name, role: m.role, status: m.status }, { name: row.name, role, status }, ['name', 'role', 'status']);
    await audit(trx, s.clock.now(), who, { accountId, action, target: target(m.id), changes });
    return memberView(row);
  });
}

export async function removeMember(s: Services, accountId: string, memberId: string, actor: Actor, who: AuditWho): Promise<void> {
  await s.db.transaction().execute(async (trx) => {
    await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
    const m = await getMember(trx, accountId, memberId);
    mayManage(actor, m.role, undefined);
    await keepAnOwner(trx, accountId, m, null);
    // Invites and sessions go with the row (ON DELETE CASCADE).
    await trx.deleteFrom('members').where('id', '=', m.id).execute();
    await audit(trx, s.clock.now(), who, { accountId, action: 'member.removed', target: target(m.id), changes: { role: m.role } });
  });
}

/**
 * POST /console/api/invites/{token}: sets the password once; the member becomes active (audited as
 * member.updated, status invited → active, by the member themselves).
 */
export async function acceptInvite(s: Services, token: string, password: string, who: AuditWho): Promise<void> {
  const passwordHash = await hashPassword(password);
  await s.db.transaction().execute(async (trx) => {
    const inv = await trx
      .updateTable('member_invites')
      .set({ used_at: s.clock.now() })
      .where('token_hash', '=', sha256(token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', s.clock.now())
      .returning('member_id')
      .executeTakeFirst();
    if (!inv) throw new ApiError('invite_not_found');
    const m = await trx
      .updateTable('members')
      .set({ password_hash: passwordHash, status: 'active' })
      .where('id', '=', inv.member_id)
      .where('status', '=', 'invited')
      .returning(['id', 'name', 'account_id'])
      .executeTakeFirst();
    if (!m) throw new ApiError('invite_not_found');
    const by = { ...who, actor: { type: 'member' as const, id: m.id, name: m.name } };
    const changes = { status: { from: 'invited', to: 'active' }, password: 'chosen' };
    await audit(trx, s.clock.now(), by, { accountId: m.account_id, action: 'member.updated', target: target(m.id), changes });
  });
}
