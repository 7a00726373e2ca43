// Console sessions (docs/console.md "Sessions"): a random cookie whose sha256 is the row's key, a
// CSRF token per session, 12 h idle and 14 days absolute. Only active members hold sessions
// (disabling or removing a member deletes theirs).
import { timingSafeEqual } from 'node:crypto';
import type { Executor } from '../db/index.js';
import type { MemberRow } from '../db/types.js';
import { randomToken, sha256 } from '../members/service.js';
import type { Services } from '../services.js';

export const COOKIE = 'chasqui_session';
export const IDLE_MS = 12 * 3600_000;
export const ABSOLUTE_MS = 14 * 24 * 3600_000;
/** last_seen_at is written at most this often. */
const TOUCH_MS = 60_000;

export interface Session {
  tokenHash: string;
  csrf: string;
  member: MemberRow;
  /** When the session ends unless it is used again (ms): the earlier of its idle and absolute ends. */
  validUntil: number;
}

/** A new session for an active member: the cookie value (never stored) and the CSRF token (`db`: the login's transaction). */
export async function startSession(s: Services, memberId: string, db: Executor = s.db): Promise<{ token: string; csrf: string }> {
  const token = randomToken();
  const csrf = randomToken();
  const now = s.clock.now();
  await db
    .insertInto('member_sessions')
    .values({ token_hash: sha256(token), member_id: memberId, csrf, created_at: now, last_seen_at: now })
    .execute();
  await db.updateTable('members').set({ last_seen_at: now }).where('id', '=', memberId).execute();
  return { token, csrf };
}

/** The session of a cookie value, or null (unknown, expired, or its member not active). */
export async function sessionOf(s: Services, token: string | undefined): Promise<Session | null> {
  if (!token || token.length > 200) return null;
  const tokenHash = sha256(token);
  const row = await s.db
    .selectFrom('member_sessions as ms')
    .innerJoin('members as m', 'm.id', 'ms.member_id')
    .selectAll('m')
    .select(['ms.csrf', 'ms.created_at as session_created_at', 'ms.last_seen_at as session_seen_at'])
    .where('ms.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return null;
  const now = s.clock.ms();
  const { csrf, session_created_at, session_seen_at, ...member } = row;
  if (member.status !== 'active' || now - session_seen_at.getTime() > IDLE_MS || now - session_created_at.getTime() > ABSOLUTE_MS) {
    await endSession(s, token);
    return null;
  }
  let seen = session_seen_at.getTime();
  if (now - seen >= TOUCH_MS) {
    const at = s.clock.now();
    await s.db.updateTable('member_sessions').set({ last_seen_at: at }).where('token_hash', '=', tokenHash).execute();
    await s.db.updateTable('members').set({ last_seen_at: at }).where('id', '=', member.id).execute();
    seen = at.getTime();
  }
  return { tokenHash, csrf, member, validUntil: Math.min(seen + IDLE_MS, session_created_at.getTime() + ABSOLUTE_MS) };
}

export async function endSession(s: Services, token: string): Promise<void> {
  await s.db.deleteFrom('member_sessions').where('token_hash', '=', sha256(token)).execute();
}

/** The X-Chasqui-CSRF header equals the session's token (constant time). */
export function csrfMatches(session: Session, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const a = Buffer.from(header);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}
