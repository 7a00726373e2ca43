// Channel numbers of an account (operator.md, "Channel numbers"). The first number
// of an account is its default; making another the default unsets the previous one. Cloud API ids
// and secrets live in the cloud_* columns, the secrets sealed (docs/privacy.md "Secrets sealed at
// rest"), and never leave this module's view (nor the logs).
import { sql } from 'kysely';
import { type AuditWho, audit, fromTo } from '../audit/trail.js';
import type { Executor } from '../db/index.js';
import type { PhoneNumberRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import { type Keyring, openOrNull, sameSecret } from '../secrets/keyring.js';
import type { Services } from '../services.js';
import { announceChange } from './hot-reads.js';

export interface PhoneNumberView {
  id: string;
  phone: string;
  name: string | null;
  provider: string;
  status: string;
  default: boolean;
  /** Messages a second Meta lets the number send; its sends are paced under it (docs/performance.md). */
  throughputPerSecond: number;
}

export const phoneNumberView = (p: PhoneNumberRow): PhoneNumberView => ({
  id: p.id,
  phone: p.phone,
  name: p.name,
  provider: p.provider,
  status: p.status,
  default: p.is_default,
  throughputPerSecond: p.throughput_per_second,
});

export interface CloudCredentials {
  phoneNumberId: string;
  wabaId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

export interface NewPhoneNumber {
  phone: string;
  name?: string | undefined;
  provider?: 'sandbox' | 'cloud' | undefined;
  cloud?: CloudCredentials | undefined;
}

/** The operator's view adds the number's AI agent (docs/agents.md "Assigning an agent"). */
export interface OperatorNumberView extends PhoneNumberView {
  agentId: string | null;
}

export const operatorNumberView = (p: PhoneNumberRow): OperatorNumberView => ({ ...phoneNumberView(p), agentId: p.agent_id });

const numbersOf = (db: Executor, accountId: string) =>
  db.selectFrom('phone_numbers').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();

/** The account's numbers, oldest first (GET /me). */
export const readPhoneNumbers = async (db: Executor, accountId: string): Promise<PhoneNumberView[]> =>
  (await numbersOf(db, accountId)).map(phoneNumberView);

/** The account's numbers as the operator sees them, oldest first. */
export const readOperatorNumbers = async (db: Executor, accountId: string): Promise<OperatorNumberView[]> =>
  (await numbersOf(db, accountId)).map(operatorNumberView);

// One change at a time per account, so two first numbers cannot both become the default.
const lockAccount = (trx: Executor, accountId: string) => sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`.execute(trx);

/** The credentials as stored: token, app secret and verify token sealed. */
export const sealCloud = (ring: Keyring, c: CloudCredentials): CloudCredentials => ({
  ...c,
  accessToken: ring.seal(c.accessToken, 'phone_numbers.cloud_access_token'),
  appSecret: ring.seal(c.appSecret, 'phone_numbers.cloud_app_secret'),
  verifyToken: ring.seal(c.verifyToken, 'phone_numbers.cloud_verify_token'),
});

/** The number's access token, opened for a Graph call; throws SecretKeyMissing when its key is not in the ring. */
export const cloudAccessToken = (ring: Keyring, p: Pick<PhoneNumberRow, 'cloud_access_token'>): string | null =>
  ring.openNullable(p.cloud_access_token, 'phone_numbers.cloud_access_token');

/** The number's app secret, opened to check a signature; null when unset or its key is not in the ring. */
export const cloudAppSecret = (ring: Keyring, p: Pick<PhoneNumberRow, 'cloud_app_secret'>): string | null =>
  openOrNull(ring, p.cloud_app_secret, 'phone_numbers.cloud_app_secret');

/** Inserts a number row as given, credentials already sealed (the caller holds the rules: see createPhoneNumber). */
export const insertPhoneNumber = (
  trx: Executor,
  accountId: string,
  n: { phone: string; name: string | null; provider: 'sandbox' | 'cloud'; isDefault: boolean; cloud?: CloudCredentials | undefined },
  now: Date,
): Promise<PhoneNumberRow> => {
  const cloud = n.provider === 'cloud' ? n.cloud : undefined;
  return trx
    .insertInto('phone_numbers')
    .values({
      id: newId(),
      account_id: accountId,
      phone: n.phone,
      name: n.name,
      provider: n.provider,
      status: 'connected',
      is_default: n.isDefault,
      cloud_phone_number_id: cloud?.phoneNumberId ?? null,
      cloud_waba_id: cloud?.wabaId ?? null,
      cloud_access_token: cloud?.accessToken ?? null,
      cloud_app_secret: cloud?.appSecret ?? null,
      cloud_verify_token: cloud?.verifyToken ?? null,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
};

/**
 * Connects a number to an existing account: the first one is the default, a Cloud API number
 * needs its credentials and a phoneNumberId no other number has.
 */
export async function createPhoneNumber(s: Services, accountId: string, input: NewPhoneNumber, who: AuditWho): Promise<OperatorNumberView> {
  const phone = canonicalPhone(input.phone);
  if (!phone.ok) throw invalid(['phone'], phone.message);
  const provider = input.provider ?? s.config.CHANNEL_PROVIDER;
  const cloud = input.cloud;
  if (provider === 'cloud' && !cloud) throw invalid(['cloud'], textFor('phone_number_cloud_required'));
  const row = await s.db.transaction().execute(async (trx) => {
    await lockAccount(trx, accountId);
    if (cloud) {
      const taken = await trx
        .selectFrom('phone_numbers')
        .select('id')
        .where('cloud_phone_number_id', '=', cloud.phoneNumberId)
        .executeTakeFirst();
      if (taken) throw invalid(['cloud', 'phoneNumberId'], textFor('phone_number_cloud_taken'));
    }
    const current = await trx
      .selectFrom('phone_numbers')
      .select('id')
      .where('account_id', '=', accountId)
      .where('is_default', '=', true)
      .executeTakeFirst();
    const now = s.clock.now();
    const row = await insertPhoneNumber(
      trx,
      accountId,
      { phone: phone.phone, name: input.name ?? null, provider, isDefault: !current, cloud: cloud && sealCloud(s.secrets, cloud) },
      now,
    );
    const changes = { phone: row.phone, provider, default: row.is_default };
    await audit(trx, now, who, { accountId, action: 'phone_number.connected', target: { type: 'phone_number', id: row.id }, changes });
    // Every process's sends read the account's numbers anew (channel/hot-reads.ts).
    await announceChange(trx, accountId);
    return row;
  });
  s.hotReads.forget(accountId);
  s.accountViews.changed(accountId);
  return operatorNumberView(row);
}

/**
 * Connects or disconnects a number, makes it the default, names the AI agent that answers its
 * conversations (`agentId`; null: none), or sets its throughput tier (`throughputPerSecond`: the
 * messages a second Meta allows it; the next send is paced by it). An account with numbers always has one default: it
 * changes by making another number the default, never by unsetting it. The agent must be the
 * account's and not deleted; a paused one may be named (it answers once active).
 */
export async function updatePhoneNumber(
  s: Services,
  accountId: string,
  id: string,
  patch: {
    status?: 'connected' | 'disconnected' | undefined;
    default?: boolean | undefined;
    agentId?: string | null | undefined;
    throughputPerSecond?: number | undefined;
  },
  who: AuditWho,
): Promise<OperatorNumberView> {
  const { status, default: makeDefault, agentId, throughputPerSecond } = patch;
  const row = await s.db.transaction().execute(async (trx): Promise<PhoneNumberRow> => {
    await lockAccount(trx, accountId);
    const cur = await trx
      .selectFrom('phone_numbers')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!cur) throw new ApiError('phone_number_not_found');
    if (makeDefault === false && cur.is_default) throw invalid(['default'], textFor('phone_number_keep_default'));
    if (makeDefault === true && !cur.is_default) {
      await trx
        .updateTable('phone_numbers')
        .set({ is_default: false })
        .where('account_id', '=', accountId)
        .where('is_default', '=', true)
        .execute();
    }
    if (agentId) {
      const agent = await trx
        .selectFrom('agents')
        .select('id')
        .where('account_id', '=', accountId)
        .where('id', '=', agentId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (!agent) throw invalid(['agentId'], textFor('agent_ref_not_found'));
    }
    const changes = fromTo(
      { status: cur.status, default: cur.is_default, agentId: cur.agent_id, throughputPerSecond: cur.throughput_per_second },
      patch,
      ['status', 'default', 'agentId', 'throughputPerSecond'],
    );
    const target = { type: 'phone_number', id: cur.id };
    await audit(trx, s.clock.now(), who, { accountId, action: 'phone_number.updated', target, changes });
    if (status === undefined && makeDefault === undefined && agentId === undefined && throughputPerSecond === undefined) return cur;
    // A disconnected number is refused by the next send of every process (channel/hot-reads.ts).
    await announceChange(trx, accountId);
    return trx
      .updateTable('phone_numbers')
      .set({
        ...(status !== undefined ? { status } : {}),
        ...(makeDefault !== undefined ? { is_default: makeDefault } : {}),
        ...(agentId !== undefined ? { agent_id: agentId } : {}),
        ...(throughputPerSecond !== undefined ? { throughput_per_second: throughputPerSecond } : {}),
      })
      .where('id', '=', cur.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  s.hotReads.forget(accountId);
  s.accountViews.changed(accountId);
  return operatorNumberView(row);
}

/** Whether some Cloud API number has this webhook verify token (the GET handshake; sealed, so each is opened). */
export async function isCloudVerifyToken(s: Services, token: string): Promise<boolean> {
  const rows = await s.db
    .selectFrom('phone_numbers')
    .select('cloud_verify_token')
    .where('provider', '=', 'cloud')
    .where('cloud_verify_token', 'is not', null)
    .execute();
  return rows.some((r) => {
    const mine = openOrNull(s.secrets, r.cloud_verify_token, 'phone_numbers.cloud_verify_token');
    return mine !== null && sameSecret(mine, token);
  });
}

/** A deleted agent answers no number: the numbers that named it (agents/service.ts, in its transaction) name none. */
export async function unassignAgentFromNumbers(trx: Executor, accountId: string, agentId: string): Promise<void> {
  await trx
    .updateTable('phone_numbers')
    .set({ agent_id: null })
    .where('account_id', '=', accountId)
    .where('agent_id', '=', agentId)
    .execute();
  await announceChange(trx, accountId);
}
