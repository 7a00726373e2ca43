// The inbound path (customers write): shared by the sandbox, the Cloud API and Instagram receivers.
// Set-wise (docs/architecture.md "Inbound, set-wise"): a batch of messages is stored in one
// transaction, one statement per table for the whole batch — dedupe on the provider message id →
// contacts (created on first write, with `contact.created`) → conversations and their 24-hour
// windows → open cases locked → messages → automations and agents → opt-outs → cases (opened,
// counted) and their classification → every event through the outbox in one statement. A
// customer's messages of one batch are stored in order: the batch runs in rounds, the k-th message
// of each customer in round k, so no round holds a customer twice. One message (the sandbox) is a
// batch of one: there is no other path. The dispatcher and the engines are woken after commit.
//
// Decisions (see the report / docs): a customer who writes is never refused, so the plan's
// contact limit does not apply here (api.md §7 lists it only for POST /contacts and sends);
// reactions are stored and move the window but emit no `message.received` and open no case.

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { startAllowed } from '../automations/loops.js';
import { automationsForInbound, type InboundForAutomations } from '../automations/triggers.js';
import { type InboundCaseInput, lockOpenCases, openCasesForInbound, stillOpenAt } from '../cases/open.js';
import { getSocialAccountRow } from '../channel/social-accounts.js';
import { queueClassifications, wakeClassifier } from '../classification/queue.js';
import { isOptOutPhrase } from '../contacts/opt-out.js';
import { contactsForInbound, contactView, markOptedOut } from '../contacts/service.js';
import type { Db, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { ContactRow, ConversationRow, PhoneNumberRow, SocialAccountRow } from '../db/types.js';
import { ApiError, invalid, type ValidationError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import { insertInboundMessages } from '../messages/service.js';
import type { Services } from '../services.js';
import { emitEvents, type NewEvent, queuedDeliveries } from '../webhooks/outbox.js';
import { teamTakesCase } from './service.js';

export interface InboundInput {
  accountId: string;
  /** Our phone_numbers.id that received it; null: the account's default number. */
  phoneNumberId: string | null;
  /** The customer's phone (any international spelling), or `socialchat` for the social channel. */
  from?: string;
  socialchat?: string;
  /** The social account that received it (with `socialchat`); absent: the sandbox's account-less social inbound. */
  socialAccountId?: string;
  /** The social channel's username of the customer, when reported. */
  username?: string;
  /** Profile name the channel reports. */
  name?: string;
  /** Provider message id (wamid); dedupe key. Generated when absent (sandbox). */
  providerMessageId?: string;
  /** text, image, video, audio, document, sticker, location, contacts, button, interactive, … */
  type: string;
  /** Text, caption, description or button text; null when none. */
  text: string | null;
  /** When the customer sent it (provider timestamp): the 24-hour window starts here. */
  timestamp: Date;
  /** A tapped template button: `optOut` when it is the template's opt-out button. */
  button?: { text: string; payload?: string; optOut?: boolean };
  /** The ad that brought the customer (channel referral). */
  referral?: { id: string; headline: string; sourceUrl: string };
}

export interface InboundResult {
  messageId: string;
  contactId: string;
  conversationId: string;
  /** The provider re-sent a message we already had: nothing was done again. */
  duplicate: boolean;
}

/** A message refused alone: its phone is not valid, its number is not the account's, there is none. */
export type InboundRefusal = ApiError | ValidationError;

/** Reactions do not trigger `message.received` (api.md §6). */
const SILENT_TYPES = new Set(['reaction']);

/** One message of the batch, checked: the customer's key and the dedupe id. */
interface Prepared {
  /** Its place in the batch (results come back in batch order). */
  index: number;
  input: InboundInput;
  social: boolean;
  key: { phone: string } | { socialchat: string };
  /** The customer within the account: one per round. */
  customer: string;
  wamid: string | null;
  /** The wamid is ours (the sandbox names what it receives): nothing stored can have it. */
  generated: boolean;
}

/** A message once its number (or social account) is known, as a round stores it. */
interface Item extends Prepared {
  number: PhoneNumberRow | null;
  socialAccount: SocialAccountRow | null;
  channel: 'whatsapp' | 'socialchat';
  phoneNumberId: string | null;
  /** `message.received`'s `to`: the receiving number; on the social channel, the social account's id. */
  to: string | null;
  profileName: string | undefined;
  silent: boolean;
  messageId: string;
}

/** What a round wrote for one message. */
interface Written {
  contact: ContactRow;
  created: boolean;
  conversation: ConversationRow;
}

/** What the batch's transaction did: per message its result (or a duplicate to look up), and what to wake. */
interface Stored {
  results: Map<number, InboundResult | 'raced'>;
  /** Messages refused alone (their number is not the account's, or it has none). */
  refused: Map<number, InboundRefusal>;
  contactsCreated: Set<string>;
  /** Deliveries were queued: the dispatcher is woken after the commit. */
  wakeDispatcher: boolean;
  wakeAutomations: boolean;
  wakeAgents: boolean;
  wakeClassifier: boolean;
}

/** The customer's canonical key and the dedupe id, or the item's refusal. */
function prepare(input: InboundInput, index: number): Prepared | InboundRefusal {
  const social = input.socialchat !== undefined && input.socialchat !== '';
  let key: { phone: string } | { socialchat: string };
  if (social) key = { socialchat: input.socialchat! };
  else {
    const phone = canonicalPhone(input.from ?? '');
    if (!phone.ok) return invalid(['from'], phone.message);
    key = { phone: phone.phone };
  }
  const generated = input.providerMessageId === undefined && !social;
  const wamid = input.providerMessageId ?? (generated ? `wamid.SBXIN${randomUUID().replace(/-/g, '').toUpperCase()}` : null);
  const customer = 'phone' in key ? `p:${key.phone}` : `s:${key.socialchat}`;
  return { index, input, social, key, customer, wamid, generated };
}

/** Messages already stored, by wamid, of the batch's accounts (one read; none for wamids of ours). */
async function storedByWamid(db: Db | Trx, items: Prepared[]): Promise<Map<string, InboundResult>> {
  const withWamid = items.filter((p) => p.wamid !== null && !p.generated);
  if (withWamid.length === 0) return new Map();
  const { rows } = await sql<{ account_id: string; wamid: string; id: string; contact_id: string; conversation_id: string }>`
    SELECT account_id, wamid, id, contact_id, conversation_id FROM messages
    WHERE wamid = ANY (${withWamid.map((p) => p.wamid!)}::text[]) AND direction = 'inbound'
      AND account_id = ANY (${[...new Set(withWamid.map((p) => p.input.accountId))]}::uuid[])`.execute(db);
  return new Map(
    rows.map((m) => [
      `${m.account_id} ${m.wamid}`,
      { messageId: m.id, contactId: m.contact_id, conversationId: m.conversation_id, duplicate: true },
    ]),
  );
}

/**
 * Stores a batch of inbound messages (set-wise, one transaction) and answers each in batch order:
 * its result, or the refusal of that message alone (an invalid phone, a number not of the account,
 * no number). A failure of the database fails the whole batch: processing it again changes nothing
 * already stored (wamid dedupe).
 */
export async function receiveInboundBatch(s: Services, inputs: readonly InboundInput[]): Promise<(InboundResult | InboundRefusal)[]> {
  const out: (InboundResult | InboundRefusal | undefined)[] = new Array(inputs.length);
  const prepared: Prepared[] = [];
  inputs.forEach((input, i) => {
    const p = prepare(input, i);
    if (p instanceof Error) out[i] = p;
    else prepared.push(p);
  });
  // Dedupe: what was stored before, and the same wamid twice in this batch (the first one counts).
  const before = await storedByWamid(s.db, prepared);
  const fresh: Prepared[] = [];
  const firstOf = new Map<string, Prepared>();
  const repeats: [Prepared, Prepared][] = [];
  for (const p of prepared) {
    const k = p.wamid === null ? null : `${p.input.accountId} ${p.wamid}`;
    const dup = k === null ? undefined : before.get(k);
    if (dup) out[p.index] = dup;
    else if (k !== null && firstOf.has(k)) repeats.push([p, firstOf.get(k)!]);
    else {
      if (k !== null) firstOf.set(k, p);
      fresh.push(p);
    }
  }

  if (fresh.length > 0) {
    const now = s.clock.now();
    const admitStart: InboundForAutomations['admitStart'] = (a) => startAllowed(s, a);
    const numbers = await numbersOf(s, fresh);
    const stored = await transaction(s.db, (trx) => storeBatch(trx, fresh, numbers, admitStart, now));
    // A concurrent delivery of the same message won the insert: answered as the duplicate it is.
    const raced = fresh.filter((p) => stored.results.get(p.index) === 'raced');
    const found = raced.length > 0 ? await storedByWamid(s.db, raced) : new Map<string, InboundResult>();
    for (const [index, err] of stored.refused) out[index] = err;
    for (const p of fresh) {
      const r = stored.results.get(p.index);
      if (r === undefined) continue;
      if (r !== 'raced') out[p.index] = r;
      // Provider message ids are unique across the channel: one that belongs to another account's
      // message (or to an outbound one) cannot be this customer's message.
      else out[p.index] = found.get(`${p.input.accountId} ${p.wamid}`) ?? new ApiError('inbound_wamid_taken');
    }
    if (stored.wakeDispatcher) s.dispatcher.wake();
    for (const p of fresh) {
      const r = out[p.index];
      if (r && !(r instanceof Error) && !r.duplicate) s.metrics.messageReceived(p.social ? 'instagram' : 'whatsapp');
    }
    if (stored.wakeAutomations) s.automations.wake();
    if (stored.wakeAgents) s.agents.wake();
    if (stored.wakeClassifier) wakeClassifier(s);
    // GET /me counts the account's contacts; nothing else it shows moves with a message.
    for (const accountId of stored.contactsCreated) s.accountViews.changed(accountId);
  }
  for (const [p, first] of repeats) {
    const r = out[first.index];
    out[p.index] = r === undefined || r instanceof Error ? r : { ...r, duplicate: true };
  }
  return out.map((r, i) => {
    if (r === undefined) throw new Error(`inbound message ${i} has no outcome`);
    return r;
  });
}

/** One message: a batch of one. Its refusal is thrown. */
export async function receiveInbound(s: Services, input: InboundInput): Promise<InboundResult> {
  const [r] = await receiveInboundBatch(s, [input]);
  if (r instanceof Error) throw r;
  return r!;
}

/**
 * The batch's transaction. It may run again (a deadlock elsewhere): it only touches the database.
 * Each account's messages run in rounds (the k-th message of each customer in round k).
 */
async function storeBatch(
  trx: Trx,
  batch: Prepared[],
  numbers: Map<string, PhoneNumberRow[]>,
  admitStart: InboundForAutomations['admitStart'],
  now: Date,
): Promise<Stored> {
  const stored: Stored = {
    results: new Map(),
    refused: new Map(),
    contactsCreated: new Set(),
    wakeDispatcher: false,
    wakeAutomations: false,
    wakeAgents: false,
    wakeClassifier: false,
  };
  const byAccount = new Map<string, Prepared[]>();
  for (const p of batch) byAccount.set(p.input.accountId, [...(byAccount.get(p.input.accountId) ?? []), p]);
  for (const [accountId, list] of byAccount) {
    const items = await resolveReceivers(trx, accountId, list, numbers.get(accountId) ?? [], stored);
    const rounds: Item[][] = [];
    const seen = new Map<string, number>();
    for (const item of items) {
      const k = seen.get(item.customer) ?? 0;
      seen.set(item.customer, k + 1);
      if (k === rounds.length) rounds.push([]);
      rounds[k]!.push(item);
    }
    for (const round of rounds) await storeRound(trx, accountId, round, admitStart, now, stored);
  }
  stored.wakeDispatcher = queuedDeliveries(trx);
  return stored;
}

/**
 * The numbers of each account of the batch that needs them, the default first: this process's copy
 * (channel/hot-reads.ts, kept until a writer of `phone_numbers` announces a change), else one read
 * per account. An account without numbers is always read anew.
 */
async function numbersOf(s: Services, batch: Prepared[]): Promise<Map<string, PhoneNumberRow[]>> {
  const accounts = new Set(batch.filter((p) => !p.social || p.input.phoneNumberId).map((p) => p.input.accountId));
  const out = new Map<string, PhoneNumberRow[]>();
  for (const accountId of accounts) {
    const load = () =>
      s.db
        .selectFrom('phone_numbers')
        .selectAll()
        .where('account_id', '=', accountId)
        .orderBy('is_default', 'desc')
        .orderBy(sql`status = 'connected'`, 'desc')
        .orderBy('created_at')
        .orderBy('id')
        .execute();
    out.set(accountId, await s.hotReads.read(accountId, 'inbound numbers', load, (rows) => rows.length > 0));
  }
  return out;
}

/**
 * The number (or social account) each message reached: the one named, of this account, or the
 * account's default. A message whose number is not found is refused alone.
 */
async function resolveReceivers(trx: Trx, accountId: string, list: Prepared[], numbers: PhoneNumberRow[], stored: Stored): Promise<Item[]> {
  const items: Item[] = [];
  for (const p of list) {
    const { input, social } = p;
    // The social channel: the social account that received it (and no number); without one (the
    // sandbox's account-less social inbound), the number named, if any.
    const socialAccount = social && input.socialAccountId ? await getSocialAccountRow(trx, accountId, input.socialAccountId) : null;
    let number: PhoneNumberRow | null = null;
    if (!socialAccount) {
      number = input.phoneNumberId ? (numbers.find((n) => n.id === input.phoneNumberId) ?? null) : (numbers[0] ?? null);
      // Refused alone: the rest of the batch goes on.
      if (input.phoneNumberId && !number) {
        stored.refused.set(p.index, new ApiError('phone_number_not_found'));
        continue;
      }
      if (!number && !social) {
        stored.refused.set(p.index, new ApiError('no_connected_number'));
        continue;
      }
    }
    const to = socialAccount ? socialAccount.id : social ? (number && input.phoneNumberId ? number.phone : null) : number!.phone;
    items.push({
      ...p,
      number,
      socialAccount,
      channel: social ? 'socialchat' : 'whatsapp',
      phoneNumberId: social ? (input.phoneNumberId ? (number?.id ?? null) : null) : number!.id,
      to,
      // Instagram: the profile name when known, else the username, else "Instagram".
      profileName: socialAccount ? (input.name ?? input.username ?? 'Instagram') : input.name,
      silent: SILENT_TYPES.has(input.type),
      messageId: newId(),
    });
  }
  return items;
}

/** One round: messages of distinct customers of one account, each table written once. */
async function storeRound(
  trx: Trx,
  accountId: string,
  items: Item[],
  admitStart: InboundForAutomations['admitStart'],
  now: Date,
  stored: Stored,
): Promise<void> {
  // Locks in the one order (docs/architecture.md "Lock order"): contacts → conversations → open
  // cases, all before the messages and the events, whose delivery counter is the last lock.
  const contacts = await contactsForInbound(
    trx,
    accountId,
    items.map((i) => ({ customer: i.customer, key: i.key, profileName: profileNameOf(i), username: usernameOf(i) })),
    now,
  );
  const conversations = await conversationsFor(trx, accountId, items, contacts, now);
  const written = new Map<Item, Written>();
  for (const item of items) {
    const c = contacts.get(item.customer)!;
    written.set(item, { contact: c.contact, created: c.created, conversation: conversations.get(item.customer)! });
  }
  // Only a conversation that was there before can have an open case.
  const openCases = await lockOpenCases(
    trx,
    items.filter((i) => !i.silent && conversations.get(i.customer)!.existed).map((i) => conversations.get(i.customer)!.id),
  );

  const inserted = await insertInboundMessages(
    trx,
    accountId,
    items.map((i) => {
      const w = written.get(i)!;
      return {
        id: i.messageId,
        conversation_id: w.conversation.id,
        contact_id: w.contact.id,
        phone_number_id: i.phoneNumberId,
        type: i.input.type,
        text: i.input.text,
        // A phone column: a social account's id is the event's `to`, not a phone.
        to_phone: i.socialAccount ? null : i.to,
        wamid: i.wamid,
        source: i.social ? 'socialchat' : 'inbound',
        provider_timestamp: i.input.timestamp,
      };
    }),
    now,
  );
  const kept = items.filter((i) => inserted.has(i.messageId));
  for (const i of items) if (!inserted.has(i.messageId)) stored.results.set(i.index, 'raced');

  // Automations and agents: the input of a running execution, or a trigger (after the messages,
  // before the events: docs/architecture.md "Lock order").
  const optOutVia = new Map<Item, 'button' | 'keyword'>();
  for (const i of kept) {
    const via = i.input.button?.optOut ? 'button' : !i.silent && isOptOutPhrase(i.input.text) ? 'keyword' : null;
    if (via) optOutVia.set(i, via);
  }
  const deciding = kept.filter((i) => !i.silent);
  const outcomes = await automationsForInbound(
    trx,
    deciding.map((i) => {
      const w = written.get(i)!;
      const open = openCases.get(w.conversation.id);
      return {
        accountId,
        conversation: w.conversation,
        contactId: w.contact.id,
        number: i.number,
        socialAccount: i.socialAccount,
        messageId: i.messageId,
        text: i.input.text ?? i.input.button?.text ?? null,
        contactCreated: w.created,
        openCaseId: open && stillOpenAt(open, i.input.timestamp) ? open.id : null,
        optOut: optOutVia.has(i),
        admitStart,
      };
    }),
    now,
  );
  for (const outcome of outcomes) {
    if (outcome && (outcome.kind === 'started' || (outcome.kind === 'input' && outcome.wake))) stored.wakeAutomations = true;
    if (outcome?.kind === 'agent' && outcome.wake) stored.wakeAgents = true;
  }

  // Opt-out: the template's opt-out button, or a message that is nothing but an opt-out phrase.
  const optingOut = kept.filter((i) => optOutVia.has(i) && !written.get(i)!.contact.opted_out);
  const optedOut =
    optingOut.length > 0
      ? await markOptedOut(
          trx,
          optingOut.map((i) => written.get(i)!.contact.id),
          now,
        )
      : new Map<string, ContactRow>();

  // Cases: opened or counted; the team's takeover without a case takes the first one; classification.
  const caseInputs: InboundCaseInput[] = kept
    .filter((i) => !i.silent)
    .map((i) => {
      const w = written.get(i)!;
      return {
        conversationId: w.conversation.id,
        contactId: w.contact.id,
        contactName: (optedOut.get(w.contact.id) ?? w.contact).name,
        contactCreated: w.created,
        at: i.input.timestamp,
        ...(i.input.referral ? { referral: i.input.referral } : {}),
        open: openCases.get(w.conversation.id),
      };
    });
  const { cases, catalogue } = await openCasesForInbound(trx, accountId, caseInputs, now);
  const caseOf = new Map<Item, { id: string; events: NewEvent[] }>();
  const toClassify: { caseId: string; inboundCount: number; reasonStatus: string; reasonSource: string | null; messageId: string }[] = [];
  let n = 0;
  for (const i of kept) {
    if (i.silent) continue;
    const c = cases[n++]!;
    const w = written.get(i)!;
    caseOf.set(i, { id: c.id, events: c.events });
    // The team took the conversation over when no case was open: the first case that opens is theirs.
    if (w.conversation.handling_type === 'team' && w.conversation.handling_case_id === null)
      await teamTakesCase(trx, w.conversation.id, c.id);
    toClassify.push({ ...c, caseId: c.id, messageId: i.messageId });
  }
  // The case's first three messages are classified (src/classification/queue.ts).
  if (await queueClassifications(trx, accountId, toClassify, now, catalogue)) stored.wakeClassifier = true;

  // Every event of the round in one write, each customer's in their order.
  const events: NewEvent[] = [];
  for (const i of kept) {
    const w = written.get(i)!;
    let contact = w.contact;
    if (w.created) {
      events.push({
        accountId,
        kind: 'contact.created',
        data: { source: i.social ? 'socialchat' : 'inbound', contact: contactView(contact) },
      });
      stored.contactsCreated.add(accountId);
    }
    if (!i.silent) events.push({ accountId, kind: 'message.received', data: receivedData(i, w) });
    const after = optedOut.get(contact.id);
    if (after && optingOut.includes(i)) {
      contact = after;
      events.push({
        accountId,
        kind: 'contact.opted_out',
        data: { contact: contactView(contact), via: optOutVia.get(i)!, text: i.input.text ?? i.input.button?.text ?? null },
      });
    }
    events.push(...(caseOf.get(i)?.events ?? []));
    stored.results.set(i.index, { messageId: i.messageId, contactId: contact.id, conversationId: w.conversation.id, duplicate: false });
  }
  await emitEvents(trx, events, now);
}

const profileNameOf = (i: Item): string | undefined => i.profileName?.trim().slice(0, 120) || undefined;
const usernameOf = (i: Item): string | undefined => (i.social ? i.input.username?.trim().slice(0, 200) || undefined : undefined);

/** `message.received` data (decisions.md "Event data keys"). */
function receivedData(i: Item, w: Written): Record<string, unknown> {
  const { input, social, wamid } = i;
  const contact = w.contact;
  return {
    id: i.messageId,
    ...(social ? { source: 'socialchat' } : { wamid }),
    conversationId: w.conversation.id,
    to: i.to,
    contact: {
      id: contact.id,
      name: contact.name,
      ...(social ? { socialchat: { id: contact.socialchat_id, username: contact.socialchat_username } } : { phone: contact.phone }),
    },
    type: input.type,
    text: input.text,
    timestamp: input.timestamp.toISOString(),
    ...(input.button ? { button: { text: input.button.text, payload: input.button.payload ?? null } } : {}),
    ...(input.referral ? { referral: input.referral } : {}),
  };
}

/**
 * The round's conversations by customer, in one statement: the existing ones locked (by the update)
 * and their 24-hour windows moved by each message's timestamp (never back: a late or re-ordered
 * delivery never shrinks it), the missing ones created. Not an upsert: ON CONFLICT DO UPDATE would
 * write a row version and lock it FOR UPDATE (its columns are the unique key), blocking the
 * messages' key checks. `existed`: the conversation was there before (only then can a case be open).
 */
async function conversationsFor(
  trx: Trx,
  accountId: string,
  items: Item[],
  contacts: Map<string, { contact: ContactRow }>,
  now: Date,
): Promise<Map<string, ConversationRow & { existed: boolean }>> {
  const found = new Map<string, ConversationRow & { existed: boolean }>();
  const touchOrCreate = async (list: Item[]) => {
    const { rows } = await sql<ConversationRow & { customer: string; existed: boolean }>`
      WITH u AS (
        SELECT * FROM unnest(${list.map(() => newId())}::uuid[], ${list.map((i) => i.customer)}::text[],
          ${list.map((i) => contacts.get(i.customer)!.contact.id)}::uuid[], ${list.map((i) => i.channel)}::text[],
          ${list.map((i) => i.phoneNumberId)}::uuid[], ${list.map((i) => i.socialAccount?.id ?? null)}::uuid[],
          ${list.map((i) => i.input.timestamp)}::timestamptz[]) AS u(id, customer, contact_id, channel, number_id, social_id, at)),
      upd AS (
        UPDATE conversations c SET last_inbound_at = GREATEST(c.last_inbound_at, u.at)
        FROM u
        WHERE c.account_id = ${accountId} AND c.contact_id = u.contact_id AND c.channel = u.channel
          AND c.phone_number_id IS NOT DISTINCT FROM u.number_id AND c.social_account_id IS NOT DISTINCT FROM u.social_id
        RETURNING c.*, u.customer),
      ins AS (
        INSERT INTO conversations (id, account_id, contact_id, phone_number_id, social_account_id, channel, last_inbound_at, created_at)
        SELECT u.id, ${accountId}, u.contact_id, u.number_id, u.social_id, u.channel, u.at, ${now} FROM u
        WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.customer = u.customer)
        ORDER BY u.id
        ON CONFLICT (account_id, contact_id, channel, phone_number_id, social_account_id) DO NOTHING
        RETURNING *)
      SELECT *, true AS existed FROM upd
      UNION ALL
      SELECT ins.*, u.customer, false AS existed FROM ins JOIN u ON u.id = ins.id`.execute(trx);
    for (const { customer, ...c } of rows) found.set(customer, c);
  };
  await touchOrCreate(items);
  // Created meanwhile by another writer (after this statement's snapshot): locked and moved now.
  const raced = items.filter((i) => !found.has(i.customer));
  if (raced.length > 0) await touchOrCreate(raced);
  if (items.some((i) => !found.has(i.customer))) throw new Error('conversation vanished after a conflicting insert');
  return found;
}
