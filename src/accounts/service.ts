// Accounts: plan, per-account limit overrides, and the account view of GET /me and the operator API.

import { type AuditWho, audit, fromTo } from '../audit/trail.js';
import { type PhoneNumberView, readPhoneNumbers } from '../channel/phone-numbers.js';
import type { Executor } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { forgetCredentials } from '../keys/service.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, type Limits } from '../limits/plans.js';
import type { UsageMeter, UsageSnapshot } from '../limits/types.js';
import type { Services } from '../services.js';

export const accountBase = (a: AccountRow) => ({
  id: a.id,
  name: a.name,
  plan: a.plan,
  limits: effectiveLimits(a.plan, a.limits),
  createdAt: a.created_at.toISOString(),
});

export async function getAccount(db: Executor, id: string): Promise<AccountRow> {
  const row = await db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new ApiError('account_not_found');
  return row;
}

export async function createAccount(
  db: Executor,
  input: { name: string; plan: string; limits?: Partial<Limits> },
  now: Date,
): Promise<AccountRow> {
  return db
    .insertInto('accounts')
    .values({
      id: newId(),
      name: input.name,
      plan: input.plan,
      limits: JSON.stringify(input.limits ?? {}),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Changes name, plan or limit overrides. The key cache and the GET /me views of this process
 * forget the account at once (other processes within their TTL). A plan and a limit that change
 * are audited (account.plan_changed, account.limits_changed: each override from → to).
 */
export async function updateAccount(
  s: Services,
  id: string,
  patch: { name?: string | undefined; plan?: string | undefined; limits?: Partial<Limits> | undefined },
  who: AuditWho,
): Promise<AccountRow> {
  const now = s.clock.now();
  const row = await s.db.transaction().execute(async (trx) => {
    const cur = await trx.selectFrom('accounts').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
    if (!cur) throw new ApiError('account_not_found');
    const limits = patch.limits ? { ...cur.limits, ...patch.limits } : cur.limits;
    const next = await trx
      .updateTable('accounts')
      .set({ name: patch.name ?? cur.name, plan: patch.plan ?? cur.plan, limits: JSON.stringify(limits), updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const target = { type: 'account', id };
    const plan = fromTo({ plan: cur.plan }, { plan: patch.plan }, ['plan']);
    if (plan.plan) await audit(trx, now, who, { accountId: id, action: 'account.plan_changed', target, changes: plan });
    const changed = fromTo(cur.limits as Record<string, unknown>, patch.limits ?? {}, Object.keys(patch.limits ?? {}));
    if (Object.keys(changed).length > 0)
      await audit(trx, now, who, { accountId: id, action: 'account.limits_changed', target, changes: { limits: changed } });
    return next;
  });
  forgetCredentials(s, id);
  s.accountViews.changed(id);
  return row;
}

/** Every account, oldest first (the operator's list). */
export const listAccounts = (db: Executor): Promise<AccountRow[]> => db.selectFrom('accounts').selectAll().orderBy('id').execute();

/** The account with limits, usage and phone numbers (decisions.md, "GET /me"). */
export const accountViewOf = (account: AccountRow, usage: UsageSnapshot, phoneNumbers: PhoneNumberView[]) => ({
  ...accountBase(account),
  usage: {
    period: { start: usage.period.start.toISOString(), end: usage.period.end.toISOString() },
    apiCalls: usage.apiCalls,
    webhookDeliveries: usage.webhookDeliveries,
    contacts: usage.contacts,
    automationSteps: usage.automationSteps,
    automationHttpRequests: usage.automationHttpRequests,
    aiApps: usage.aiApps,
  },
  phoneNumbers,
});
export type AccountView = ReturnType<typeof accountViewOf>;

/** The account view read from the database now (the operator API; GET /me uses view-cache.ts). */
export async function accountView(db: Executor, usage: UsageMeter, account: AccountRow): Promise<AccountView> {
  const [snap, numbers] = await Promise.all([usage.snapshot(account.id), readPhoneNumbers(db, account.id)]);
  return accountViewOf(account, snap, numbers);
}
