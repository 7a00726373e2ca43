// The Cloud API webhook, once parsed. At receipt (acceptWebhook): find the numbers it names and
// check the signature with their app secrets; the route then queues the batch and answers 200
// (../inbound-queue.ts). Later (processWebhook, from the inbound worker): run every message and
// status through the same inbound/status code the sandbox uses. Idempotent (Meta re-sends, the
// queue retries): messages dedupe on the wamid, statuses only move forward, template updates set a state.
import { sql } from 'kysely';
import { receiveInboundBatch } from '../../conversations/inbound.js';
import type { Db } from '../../db/index.js';
import type { PhoneNumberRow } from '../../db/types.js';
import { ApiError } from '../../http/errors.js';
import { describeFailure } from '../../jobs/dead-letters.js';
import { mostAdvanced, reportStatus } from '../../messages/status.js';
import type { Services } from '../../services.js';
import { enqueueInbound, type QueuedBatch } from '../inbound-queue.js';
import { cloudAppSecret } from '../phone-numbers.js';
import { verifySignature } from './signature.js';
import { applyTemplateUpdate } from './templates.js';
import { type ParsedMessage, type ParsedStatus, parseWebhook } from './webhook.js';

export interface ReceiveOutcome {
  messages: number;
  duplicates: number;
  statuses: number;
  templates: number;
  skipped: number;
  /** Items that failed for a reason other than our own rules: the queued batch is tried again later. */
  failed: number;
  /** The last such failure, as a dead letter keeps it (jobs/dead-letters.ts describeFailure). */
  error?: string;
}

/** Does the signature match the app secret of any cloud number? (Payloads that name none of ours.) */
export async function signedByAnyNumber(s: Services, raw: Buffer, signature: string | undefined): Promise<boolean> {
  if (!signature) return false;
  const rows = await s.db
    .selectFrom('phone_numbers')
    .select('cloud_app_secret')
    .distinct()
    .where('provider', '=', 'cloud')
    .where('cloud_app_secret', 'is not', null)
    .execute();
  return rows.some((r) => {
    const secret = cloudAppSecret(s.secrets, r);
    return secret !== null && verifySignature(raw, signature, secret);
  });
}

/** What the receipt found: the signature's verdict and what to queue. */
export interface Acceptance {
  /** The signature matches no app secret of the numbers (or WABAs) the payload names: answer 401, nothing stored. */
  unauthorized: boolean;
  /** Signed by one of our apps but naming nothing of ours: acknowledged, nothing stored. */
  ignored: boolean;
  /** Graph phone-number ids and WABA ids whose app secret verified the signature. */
  numbers: string[];
  wabas: string[];
  /** Ordering keys (../inbound-queue.ts): one per customer of a number, one per WABA with template updates. */
  keys: string[];
}

/** The ordering key of one customer's messages to one number (kept in payload and receipt order). */
export const customerKey = (graphPhoneNumberId: string, from: string) => `cloud:${graphPhoneNumberId}:${from}`;
const wabaKey = (wabaId: string) => `cloud-waba:${wabaId}`;

async function numbersByGraphId(s: Services, graphIds: string[]): Promise<PhoneNumberRow[]> {
  if (graphIds.length === 0) return [];
  // Ids from the body travel as one array parameter, however many the body names.
  return s.db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('provider', '=', 'cloud')
    .where(sql<boolean>`cloud_phone_number_id = any(${graphIds}::text[])`)
    .execute();
}

async function numbersByWaba(s: Services, wabaIds: string[]): Promise<PhoneNumberRow[]> {
  if (wabaIds.length === 0) return [];
  return s.db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('provider', '=', 'cloud')
    .where(sql<boolean>`cloud_waba_id = any(${wabaIds}::text[])`)
    .execute();
}

/**
 * The numbers a receipt found, by `g:<Graph phone-number id>` and `w:<WABA id>`, kept 2 s by the
 * injected clock (as the key cache is), per database. Only found numbers are kept, and a receipt
 * uses them only when every id it names is kept and every one verifies the signature; anything
 * else reads the table as before. So a rotated app secret or a removed number is seen at once on
 * the refusal side, and an old secret still verifies for at most 2 s (processing reads the numbers
 * again: a removed number's items are skipped there).
 */
const KEEP_MS = 2_000;
const kept = new WeakMap<Db, Map<string, { rows: PhoneNumberRow[]; until: number }>>();

function keptFor(s: Services): Map<string, { rows: PhoneNumberRow[]; until: number }> {
  let m = kept.get(s.db);
  if (!m) {
    m = new Map();
    kept.set(s.db, m);
  }
  return m;
}

/** Every id's kept rows when all are kept and fresh, else undefined. */
function keptNumbers(s: Services, graphIds: string[], wabaIds: string[]): [PhoneNumberRow[], PhoneNumberRow[]] | undefined {
  const m = keptFor(s);
  const now = s.clock.ms();
  const out: [PhoneNumberRow[], PhoneNumberRow[]] = [[], []];
  for (const [i, ids, p] of [
    [0, graphIds, 'g:'],
    [1, wabaIds, 'w:'],
  ] as const) {
    for (const id of ids) {
      const e = m.get(p + id);
      if (!e || e.until <= now) return undefined;
      out[i].push(...e.rows);
    }
  }
  return out;
}

function keep(s: Services, byGraphId: PhoneNumberRow[], byWaba: PhoneNumberRow[]): void {
  const m = keptFor(s);
  const until = s.clock.ms() + KEEP_MS;
  if (m.size > 10_000) m.clear();
  for (const n of byGraphId) m.set(`g:${n.cloud_phone_number_id}`, { rows: [n], until });
  const wabas = new Map<string, PhoneNumberRow[]>();
  for (const n of byWaba) wabas.set(n.cloud_waba_id!, [...(wabas.get(n.cloud_waba_id!) ?? []), n]);
  for (const [id, rows] of wabas) m.set(`w:${id}`, { rows, until });
}

/**
 * The receipt (before the 200): finds the numbers the batch names, checks the signature with their
 * app secrets, and names the ordering keys of what it will process. Reads only; the caller queues.
 */
export async function acceptWebhook(s: Services, raw: Buffer, payload: unknown, signature: string | undefined): Promise<Acceptance> {
  const { items } = parseWebhook(payload, s.clock.now());
  const graphIds = [...new Set(items.flatMap((i) => (i.kind === 'template' ? [] : [i.graphPhoneNumberId])))];
  const wabaIds = [...new Set(items.flatMap((i) => (i.kind === 'template' ? [i.wabaId] : [])))];

  // Each number's data is authenticated by its own app secret (one Meta app signs one POST).
  const verified = new Map<string, boolean>();
  const ok = (n: PhoneNumberRow): boolean => {
    const secret = cloudAppSecret(s.secrets, n) ?? '';
    let v = verified.get(secret);
    if (v === undefined) {
      v = verifySignature(raw, signature, secret);
      verified.set(secret, v);
    }
    return v;
  };
  let found = keptNumbers(s, graphIds, wabaIds);
  if (!found?.every((rows) => rows.every(ok))) {
    found = await Promise.all([numbersByGraphId(s, graphIds), numbersByWaba(s, wabaIds)]);
    keep(s, ...found);
  }
  const [byGraphId, byWaba] = found;
  const numbers = new Set(byGraphId.filter(ok).map((n) => n.cloud_phone_number_id!));
  const wabas = new Set(byWaba.filter(ok).map((n) => n.cloud_waba_id!));
  if (numbers.size === 0 && wabas.size === 0) {
    // Nothing of ours verified. A body signed by one of our apps that names no number of ours
    // (Meta's test ping, a number removed here) is acknowledged and ignored; anything else is refused.
    const unauthorized = !(await signedByAnyNumber(s, raw, signature));
    return { unauthorized, ignored: !unauthorized, numbers: [], wabas: [], keys: [] };
  }
  const keys = new Set<string>();
  for (const i of items) {
    if (i.kind === 'message' && numbers.has(i.graphPhoneNumberId)) keys.add(customerKey(i.graphPhoneNumberId, i.from));
    else if (i.kind === 'template' && wabas.has(i.wabaId)) keys.add(wabaKey(i.wabaId));
  }
  return { unauthorized: false, ignored: false, numbers: [...numbers], wabas: [...wabas], keys: [...keys] };
}

/**
 * POST /channels/whatsapp/webhook once the body is JSON: verifies, then stores the batch in one
 * insert (committed before the 200) and wakes this process's inbound worker.
 */
export async function receiveWebhook(
  s: Services,
  raw: Buffer,
  payload: unknown,
  signature: string | undefined,
): Promise<{ unauthorized: boolean; failed: number }> {
  const a = await acceptWebhook(s, raw, payload, signature);
  if (!a.unauthorized && !a.ignored) {
    await enqueueInbound(s, { channel: 'cloud', body: raw.toString('utf8'), numbers: a.numbers, wabas: a.wabas, keys: a.keys });
  }
  return { unauthorized: a.unauthorized, failed: 0 };
}

/**
 * The inbound worker's processor of queued `cloud` rows claimed together (their customers differ:
 * ../inbound-queue.ts): their messages are stored in one set-wise pass; each row's outcome.
 */
export async function processQueuedCloud(s: Services, rows: QueuedBatch[]): Promise<ReceiveOutcome[]> {
  return processWebhooks(
    s,
    rows.map((row) => ({
      payload: JSON.parse(row.body),
      verified: { numbers: row.numbers, wabas: row.wabas, receivedAt: row.received_at },
    })),
  );
}

/** What the receipt verified of a batch: its numbers and WABAs, and when it arrived. */
interface Verified {
  numbers: string[];
  wabas: string[];
  receivedAt: Date;
}

/**
 * Processes queued batches (../inbound-queue.ts): every message and status of the numbers, and
 * every template update of the WABAs, each receipt verified. `receivedAt` stands for "now" in the
 * parser's time bounds, so a retry reads the batch as the receipt did. Template updates first,
 * then every batch's messages in one set-wise pass (conversations/inbound.ts; each customer's in
 * payload order), then the statuses. Returns each batch's outcome.
 */
export async function processWebhooks(s: Services, batches: { payload: unknown; verified: Verified }[]): Promise<ReceiveOutcome[]> {
  const parts: { outcome: ReceiveOutcome; messages: ParsedMessage[]; statuses: ParsedStatus[] }[] = [];
  const numbers = new Map<string, PhoneNumberRow>();
  // A number removed (or moved to another WABA) since the receipt is not ours any more: read now,
  // once for every batch processed together.
  const [allByGraphId, allByWaba] = await Promise.all([
    numbersByGraphId(s, [...new Set(batches.flatMap((b) => b.verified.numbers))]),
    numbersByWaba(s, [...new Set(batches.flatMap((b) => b.verified.wabas))]),
  ]);
  for (const { payload, verified } of batches) {
    const { items, skipped } = parseWebhook(payload, verified.receivedAt);
    const outcome: ReceiveOutcome = { messages: 0, duplicates: 0, statuses: 0, templates: 0, skipped: skipped.length, failed: 0 };
    if (skipped.length > 0) s.log.debug({ skipped }, 'cloud webhook: parts skipped');

    // Only what this batch's receipt verified.
    const mine = new Map(
      allByGraphId.filter((n) => verified.numbers.includes(n.cloud_phone_number_id!)).map((n) => [n.cloud_phone_number_id!, n]),
    );
    for (const [id, n] of mine) numbers.set(id, n);
    const wabaAccounts = new Map<string, string[]>();
    for (const n of allByWaba) {
      if (!verified.wabas.includes(n.cloud_waba_id!)) continue;
      const list = wabaAccounts.get(n.cloud_waba_id!) ?? [];
      if (!list.includes(n.account_id)) list.push(n.account_id);
      wabaAccounts.set(n.cloud_waba_id!, list);
    }

    const messages: ParsedMessage[] = [];
    const statuses: ParsedStatus[] = [];
    for (const item of items) {
      if (item.kind === 'template') {
        const accounts = wabaAccounts.get(item.wabaId);
        if (!accounts) {
          outcome.skipped += 1;
          continue;
        }
        const changed = await guarded(s, outcome, () => applyTemplateUpdate(s, accounts, item));
        if (changed !== undefined) outcome.templates += changed;
        s.log.info({ wabaId: item.wabaId, templateId: item.templateId, status: item.status, changed }, 'cloud template update');
      } else if (!mine.has(item.graphPhoneNumberId)) {
        s.log.warn({ graphPhoneNumberId: item.graphPhoneNumberId }, 'cloud webhook for a number that is not ours or not verified');
        outcome.skipped += 1;
      } else if (item.kind === 'message') messages.push(item);
      else statuses.push(item);
    }
    parts.push({ outcome, messages, statuses });
  }

  await storeMessages(s, parts, numbers);

  for (const { outcome, statuses } of parts) {
    // Several reports of one message in one batch: only the most advanced is applied (api.md §3: one event).
    const byWamid = new Map<string, ParsedStatus[]>();
    for (const st of statuses) byWamid.set(st.wamid, [...(byWamid.get(st.wamid) ?? []), st]);
    await eachLimited([...byWamid.values()], PARALLEL, async (group) => {
      const pick = mostAdvanced(group)!;
      outcome.skipped += group.length - 1;
      await guarded(s, outcome, () => processStatus(s, pick, numbers.get(pick.graphPhoneNumberId)!, outcome));
    });
  }
  return parts.map((p) => p.outcome);
}

/**
 * Every batch's messages in one set-wise pass. When that pass fails, each batch is tried alone,
 * then each message of a batch that still fails (a batch of one: the same path), so a message that
 * cannot be stored holds back only itself and its customer's later ones, never the others.
 */
async function storeMessages(
  s: Services,
  parts: { outcome: ReceiveOutcome; messages: ParsedMessage[] }[],
  numbers: Map<string, PhoneNumberRow>,
): Promise<void> {
  const pass = async (list: { m: ParsedMessage; outcome: ReceiveOutcome }[], failed: ReceiveOutcome): Promise<boolean> =>
    (await guarded(s, failed, () => processMessages(s, list, numbers))) !== undefined;
  const all = parts.flatMap((p) => p.messages.map((m) => ({ m, outcome: p.outcome })));
  if (all.length === 0 || (await pass(all, { ...parts[0]!.outcome }))) return;
  for (const part of parts) {
    const list = part.messages.map((m) => ({ m, outcome: part.outcome }));
    if (list.length === 0 || (parts.length > 1 && (await pass(list, { ...part.outcome })))) continue;
    const failedCustomers = new Set<string>();
    for (const one of list) {
      const k = customerKey(one.m.graphPhoneNumberId, one.m.from);
      // A customer whose earlier message failed: their later ones wait with it (order per customer).
      if (failedCustomers.has(k) || !(await pass([one], part.outcome))) {
        if (failedCustomers.has(k)) part.outcome.failed += 1;
        failedCustomers.add(k);
      }
    }
  }
}

/** Items of one webhook processed at the same time (well under the database pool). */
const PARALLEL = 4;

async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Runs one item; our own refusals (ApiError: e.g. an invalid phone) are logged and skipped, other failures counted. */
async function guarded<T>(s: Services, outcome: ReceiveOutcome, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) {
      s.log.warn({ code: err.code }, 'cloud webhook item refused');
      outcome.skipped += 1;
    } else {
      s.log.error({ err }, 'cloud webhook item failed');
      outcome.failed += 1;
      outcome.error = describeFailure(err);
    }
    return undefined;
  }
}

async function processMessages(
  s: Services,
  items: { m: ParsedMessage; outcome: ReceiveOutcome }[],
  numbers: Map<string, PhoneNumberRow>,
): Promise<true> {
  const results = await receiveInboundBatch(
    s,
    items.map(({ m: item }) => {
      const number = numbers.get(item.graphPhoneNumberId)!;
      return {
        accountId: number.account_id,
        phoneNumberId: number.id,
        from: item.from,
        ...(item.name ? { name: item.name } : {}),
        providerMessageId: item.wamid,
        type: item.type,
        text: item.text,
        timestamp: item.timestamp,
        ...(item.button ? { button: item.button } : {}),
        ...(item.referral ? { referral: item.referral } : {}),
      };
    }),
  );
  results.forEach((r, i) => {
    const outcome = items[i]!.outcome;
    if (r instanceof Error) {
      // Our own refusal of one message (its phone is not valid): logged and skipped.
      s.log.warn({ code: r instanceof ApiError ? r.code : 'validation' }, 'cloud webhook item refused');
      outcome.skipped += 1;
    } else if (r.duplicate) outcome.duplicates += 1;
    else outcome.messages += 1;
  });
  return true;
}

async function processStatus(s: Services, item: ParsedStatus, number: PhoneNumberRow, outcome: ReceiveOutcome): Promise<void> {
  // A status names a wamid: it must be one this number sent (or not stored yet: an early report).
  const msg = await s.db.selectFrom('messages').select(['id', 'phone_number_id']).where('wamid', '=', item.wamid).executeTakeFirst();
  if (msg && msg.phone_number_id !== null && msg.phone_number_id !== number.id) {
    s.log.warn({ wamid: item.wamid, phoneNumberId: number.id }, 'cloud status for a message of another number: ignored');
    outcome.skipped += 1;
    return;
  }
  // The machine applies 131050 → marketingOptOut in the same transaction as the status.
  // Our message id echoed by Meta finds a send whose wamid was never stored, if it left from this number.
  await reportStatus(s, {
    wamid: item.wamid,
    status: item.status,
    code: item.code,
    at: item.timestamp,
    messageId: item.messageId,
    phoneNumberId: number.id,
  });
  outcome.statuses += 1;
}
