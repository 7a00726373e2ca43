// The Cloud API webhook, once parsed: find the numbers it names, check the signature with their
// app secrets, and run every message and status through the same inbound/status code the sandbox
// uses. Idempotent (Meta re-sends): messages dedupe on the wamid, statuses only move forward,
// template updates set a state.
import { receiveInbound } from '../../conversations/inbound.js';
import type { PhoneNumberRow } from '../../db/types.js';
import { reportStatus } from '../../messages/status.js';
import type { Services } from '../../services.js';
import { type ParsedItem, parseWebhook } from './payload.js';
import { verifySignature } from './signature.js';
import { applyTemplateUpdate } from './templates.js';

/** Provider code: the recipient stopped accepting marketing messages (decisions.md "Channel"). */
export const MARKETING_OPT_OUT_CODE = 131050;

export interface ReceiveOutcome {
  /** No number of the payload verified the signature (or none is ours): answer 401. */
  unauthorized: boolean;
  messages: number;
  duplicates: number;
  statuses: number;
  templates: number;
  skipped: number;
}

export async function handleWebhook(s: Services, raw: Buffer, payload: unknown, signature: string | undefined): Promise<ReceiveOutcome> {
  const now = s.clock.now();
  const { items, skipped } = parseWebhook(payload, now);
  const outcome: ReceiveOutcome = { unauthorized: false, messages: 0, duplicates: 0, statuses: 0, templates: 0, skipped: skipped.length };
  if (skipped.length > 0) s.log.debug({ skipped }, 'cloud webhook: parts skipped');

  const graphIds = [...new Set(items.flatMap((i) => (i.kind === 'template' ? [] : [i.graphPhoneNumberId])))];
  const wabaIds = [...new Set(items.flatMap((i) => (i.kind === 'template' ? [i.wabaId] : [])))];
  const [byGraphId, byWaba] = await Promise.all([
    graphIds.length > 0
      ? s.db.selectFrom('phone_numbers').selectAll().where('cloud_phone_number_id', 'in', graphIds).execute()
      : Promise.resolve([] as PhoneNumberRow[]),
    wabaIds.length > 0
      ? s.db.selectFrom('phone_numbers').selectAll().where('provider', '=', 'cloud').where('cloud_waba_id', 'in', wabaIds).execute()
      : Promise.resolve([] as PhoneNumberRow[]),
  ]);

  // Each number's data is authenticated by its own app secret (one Meta app signs one POST).
  const verified = new Map<string, boolean>();
  const ok = (n: PhoneNumberRow): boolean => {
    const secret = n.cloud_app_secret ?? '';
    let v = verified.get(secret);
    if (v === undefined) {
      v = verifySignature(raw, signature, secret);
      verified.set(secret, v);
    }
    return v;
  };
  const numbers = new Map(byGraphId.filter(ok).map((n) => [n.cloud_phone_number_id!, n]));
  const wabaAccounts = new Map<string, string[]>();
  for (const n of byWaba.filter(ok)) {
    const list = wabaAccounts.get(n.cloud_waba_id!) ?? [];
    if (!list.includes(n.account_id)) list.push(n.account_id);
    wabaAccounts.set(n.cloud_waba_id!, list);
  }
  if (items.length > 0 && numbers.size === 0 && wabaAccounts.size === 0) {
    outcome.unauthorized = true;
    return outcome;
  }
  if (items.length === 0) {
    // Nothing to route (e.g. Meta's test ping for another field): accept only a body signed by one of ours.
    outcome.unauthorized = !(await anySecretVerifies(s, raw, signature));
    return outcome;
  }

  for (const item of items) await processItem(s, item, numbers, wabaAccounts, outcome);
  if (outcome.messages + outcome.statuses + outcome.templates > 0) s.dispatcher.wake();
  return outcome;
}

async function processItem(
  s: Services,
  item: ParsedItem,
  numbers: Map<string, PhoneNumberRow>,
  wabaAccounts: Map<string, string[]>,
  outcome: ReceiveOutcome,
): Promise<void> {
  if (item.kind === 'template') {
    const accounts = wabaAccounts.get(item.wabaId);
    if (!accounts) {
      outcome.skipped += 1;
      return;
    }
    const changed = await applyTemplateUpdate(s, accounts, item);
    outcome.templates += changed;
    s.log.info({ wabaId: item.wabaId, templateId: item.templateId, status: item.status, changed }, 'cloud template update');
    return;
  }
  const number = numbers.get(item.graphPhoneNumberId);
  if (!number) {
    s.log.warn({ graphPhoneNumberId: item.graphPhoneNumberId }, 'cloud webhook for a number that is not ours or not verified');
    outcome.skipped += 1;
    return;
  }
  if (item.kind === 'message') {
    const r = await receiveInbound(s, {
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
    });
    if (r.duplicate) outcome.duplicates += 1;
    else outcome.messages += 1;
    return;
  }
  // A status names a wamid: it must be one this number sent (or not stored yet: an early report).
  const msg = await s.db
    .selectFrom('messages')
    .select(['id', 'phone_number_id', 'contact_id'])
    .where('wamid', '=', item.wamid)
    .executeTakeFirst();
  if (msg && msg.phone_number_id !== null && msg.phone_number_id !== number.id) {
    s.log.warn({ wamid: item.wamid, phoneNumberId: number.id }, 'cloud status for a message of another number: ignored');
    outcome.skipped += 1;
    return;
  }
  await reportStatus(s, { wamid: item.wamid, status: item.status, code: item.code, at: item.timestamp });
  if (msg && item.status === 'failed' && item.code === MARKETING_OPT_OUT_CODE) {
    await s.db
      .updateTable('contacts')
      .set({ marketing_opt_out: true, updated_at: s.clock.now() })
      .where('id', '=', msg.contact_id)
      .where('marketing_opt_out', '=', false)
      .execute();
  }
  outcome.statuses += 1;
}

async function anySecretVerifies(s: Services, raw: Buffer, signature: string | undefined): Promise<boolean> {
  if (!signature) return false;
  const rows = await s.db
    .selectFrom('phone_numbers')
    .select('cloud_app_secret')
    .distinct()
    .where('provider', '=', 'cloud')
    .where('cloud_app_secret', 'is not', null)
    .execute();
  return rows.some((r) => verifySignature(raw, signature, r.cloud_app_secret!));
}
