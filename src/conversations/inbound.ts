// The inbound path (a customer writes): shared by the sandbox and the Cloud API receiver.
// One transaction: dedupe on the provider message id → contact (created on first write, with
// `contact.created`) → conversation and its 24-hour window → the message → `message.received` →
// opt-out → case. Events go through the outbox, written in that order once every row lock is
// taken; the dispatcher is woken after commit.
//
// Decisions (see the report / docs): a customer who writes is never refused, so the plan's
// contact limit does not apply here (api.md §7 lists it only for POST /contacts and sends);
// reactions are stored and move the window but emit no `message.received` and open no case.

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { startAllowed } from '../automations/loops.js';
import { automationForInbound, type InboundForAutomations } from '../automations/triggers.js';
import { lockOpenCase, openCaseForInbound, stillOpenAt } from '../cases/open.js';
import { getSocialAccountRow } from '../channel/social-accounts.js';
import { queueClassification, wakeClassifier } from '../classification/queue.js';
import { isOptOutPhrase } from '../contacts/opt-out.js';
import { contactForInbound, contactView, fillProfileName, fillSocialUsername, markOptedOut } from '../contacts/service.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { ContactRow, PhoneNumberRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { canonicalPhone } from '../lib/phone.js';
import { insertInboundMessage } from '../messages/service.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { conversationFor, teamTakesCase, touchInboundWindow } from './service.js';

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

/** What the transaction did: `contactCreated` changes GET /me's count; an execution to run now. */
interface Stored {
  result: InboundResult;
  contactCreated: boolean;
  wakeAutomations: boolean;
  /** An agent's stretch has a message to answer now. */
  wakeAgents: boolean;
  /** A case classification was queued: classify now rather than at the next tick. */
  wakeClassifier: boolean;
}

/** Thrown inside the transaction when a concurrent delivery of the same message won: roll back. */
class AlreadyStored extends Error {}

/** Reactions do not trigger `message.received` (api.md §6). */
const SILENT_TYPES = new Set(['reaction']);

/** The number that received it: the one named (of this account) or the account's default. */
async function receivingNumber(trx: Trx, accountId: string, phoneNumberId: string | null): Promise<PhoneNumberRow | null> {
  if (phoneNumberId) {
    const n = await trx
      .selectFrom('phone_numbers')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', phoneNumberId)
      .executeTakeFirst();
    if (!n) throw new ApiError('phone_number_not_found');
    return n;
  }
  const n = await trx
    .selectFrom('phone_numbers')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('is_default', 'desc')
    .orderBy(sql`status = 'connected'`, 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
  return n ?? null;
}

async function existingByWamid(db: Services['db'] | Trx, accountId: string, wamid: string): Promise<InboundResult | null> {
  const m = await db
    .selectFrom('messages')
    .select(['id', 'contact_id', 'conversation_id'])
    .where('wamid', '=', wamid)
    .where('account_id', '=', accountId)
    .where('direction', '=', 'inbound')
    .executeTakeFirst();
  return m ? { messageId: m.id, contactId: m.contact_id, conversationId: m.conversation_id, duplicate: true } : null;
}

/** What the inbound transaction needs besides the input: the customer's key and the dedupe id. */
interface Prepared {
  input: InboundInput;
  social: boolean;
  key: { phone: string } | { socialchat: string };
  wamid: string | null;
  /** An automation's start rate (automations/loops.ts). */
  admitStart: InboundForAutomations['admitStart'];
}

/** `message.received` data (decisions.md "Event data keys"). */
function receivedData(
  p: Prepared,
  m: { id: string; conversationId: string; to: string | null; contact: ContactRow },
): Record<string, unknown> {
  const { input, social, wamid } = p;
  return {
    id: m.id,
    ...(social ? { source: 'socialchat' } : { wamid }),
    conversationId: m.conversationId,
    to: m.to,
    contact: {
      id: m.contact.id,
      name: m.contact.name,
      ...(social ? { socialchat: { id: m.contact.socialchat_id, username: m.contact.socialchat_username } } : { phone: m.contact.phone }),
    },
    type: input.type,
    text: input.text,
    timestamp: input.timestamp.toISOString(),
    ...(input.button ? { button: { text: input.button.text, payload: input.button.payload ?? null } } : {}),
    ...(input.referral ? { referral: input.referral } : {}),
  };
}

/**
 * The inbound transaction. Locks in the one order (docs/architecture.md "Lock order"): contact →
 * conversation → open case, all before the message and the first event, whose delivery counter
 * is the last lock. It may run again (a deadlock elsewhere): it only touches the database.
 */
/** Stores the message and its effects; `contactCreated` tells whether GET /me's contact count changed. */
async function storeInbound(trx: Trx, p: Prepared, now: Date): Promise<Stored> {
  const { input, social, wamid } = p;
  // The social channel: the social account that received it (and no number); without one (the
  // sandbox's account-less social inbound), the number named, if any.
  const socialAccount = social && input.socialAccountId ? await getSocialAccountRow(trx, input.accountId, input.socialAccountId) : null;
  const number = socialAccount ? null : await receivingNumber(trx, input.accountId, input.phoneNumberId);
  if (!number && !social) throw new ApiError('no_connected_number');

  const found = await contactForInbound(trx, input.accountId, p.key, now);
  // Instagram: the profile name when known, else the username, else "Instagram".
  const profileName = socialAccount ? (input.name ?? input.username ?? 'Instagram') : input.name;
  let contact = await fillProfileName(trx, found.contact, profileName, now);
  if (social) contact = await fillSocialUsername(trx, contact, input.username, now);
  const channel = social ? 'socialchat' : 'whatsapp';
  const phoneNumberId = social ? (input.phoneNumberId ? (number?.id ?? null) : null) : number!.id;
  const conv = await conversationFor(
    trx,
    { accountId: input.accountId, contactId: contact.id, phoneNumberId, channel, socialAccountId: socialAccount?.id ?? null },
    now,
  );
  const conversation = await touchInboundWindow(trx, conv.id, input.timestamp);
  const silent = SILENT_TYPES.has(input.type);
  const openCase = silent ? undefined : await lockOpenCase(trx, conversation.id);

  // `to`: the receiving number; on the social channel, the social account's id.
  const to = socialAccount ? socialAccount.id : social ? (number && input.phoneNumberId ? number.phone : null) : number!.phone;
  const message = await insertInboundMessage(
    trx,
    {
      account_id: input.accountId,
      conversation_id: conversation.id,
      contact_id: contact.id,
      phone_number_id: phoneNumberId,
      type: input.type,
      text: input.text,
      // A phone column: a social account's id is the event's `to`, not a phone.
      to_phone: socialAccount ? null : to,
      wamid,
      source: social ? 'socialchat' : 'inbound',
      provider_timestamp: input.timestamp,
    },
    now,
  );
  if (!message) throw new AlreadyStored();

  // Opt-out: the template's opt-out button, or a message that is nothing but an opt-out phrase.
  const via = input.button?.optOut ? 'button' : !silent && isOptOutPhrase(input.text) ? 'keyword' : null;
  // Automations: the input of a running execution, or a trigger (after the message, before the
  // events: docs/architecture.md "Lock order").
  const automation = silent
    ? null
    : await automationForInbound(
        trx,
        {
          accountId: input.accountId,
          conversation: conv,
          contactId: contact.id,
          number,
          socialAccount,
          messageId: message.id,
          text: input.text ?? input.button?.text ?? null,
          contactCreated: found.created,
          openCaseId: openCase && stillOpenAt(openCase, input.timestamp) ? openCase.id : null,
          optOut: via !== null,
          admitStart: p.admitStart,
        },
        now,
      );

  if (found.created) {
    const data = { source: social ? 'socialchat' : 'inbound', contact: contactView(contact) };
    await emitEvent(trx, { accountId: input.accountId, kind: 'contact.created', data }, now);
  }
  if (!silent) {
    const data = receivedData(p, { id: message.id, conversationId: conversation.id, to, contact });
    await emitEvent(trx, { accountId: input.accountId, kind: 'message.received', data }, now);
  }

  if (via && !contact.opted_out) {
    contact = await markOptedOut(trx, contact.id, now);
    const data = { contact: contactView(contact), via, text: input.text ?? input.button?.text ?? null };
    await emitEvent(trx, { accountId: input.accountId, kind: 'contact.opted_out', data }, now);
  }

  let classify = false;
  if (!silent) {
    const at = input.timestamp;
    const referral = input.referral ? { referral: input.referral } : {};
    const inCase = await openCaseForInbound(
      trx,
      { accountId: input.accountId, conversationId: conversation.id, contactId: contact.id, at, ...referral },
      openCase,
      now,
    );
    // The team took the conversation over when no case was open: the first case that opens is theirs.
    if (conv.handling_type === 'team' && conv.handling_case_id === null) await teamTakesCase(trx, conversation.id, inCase.id);
    // The case's first three messages are classified (src/classification/queue.ts).
    classify = await queueClassification(trx, input.accountId, inCase, message.id, now);
  }
  return {
    result: { messageId: message.id, contactId: contact.id, conversationId: conversation.id, duplicate: false },
    contactCreated: found.created,
    wakeAutomations: automation !== null && (automation.kind === 'started' || (automation.kind === 'input' && automation.wake)),
    wakeAgents: automation?.kind === 'agent' && automation.wake,
    wakeClassifier: classify,
  };
}

export async function receiveInbound(s: Services, input: InboundInput): Promise<InboundResult> {
  const social = input.socialchat !== undefined && input.socialchat !== '';
  let key: { phone: string } | { socialchat: string };
  if (social) key = { socialchat: input.socialchat! };
  else {
    const phone = canonicalPhone(input.from ?? '');
    if (!phone.ok) throw invalid(['from'], phone.message);
    key = { phone: phone.phone };
  }
  const wamid = input.providerMessageId ?? (social ? null : `wamid.SBXIN${randomUUID().replace(/-/g, '').toUpperCase()}`);
  if (wamid) {
    const dup = await existingByWamid(s.db, input.accountId, wamid);
    if (dup) return dup;
  }

  const now = s.clock.now();
  let stored: Stored;
  try {
    stored = await transaction(s.db, (trx) => storeInbound(trx, { input, social, key, wamid, admitStart: (a) => startAllowed(s, a) }, now));
  } catch (err) {
    if (err instanceof AlreadyStored && wamid) {
      const dup = await existingByWamid(s.db, input.accountId, wamid);
      if (dup) return dup;
      // Provider message ids are unique across the channel: this one belongs to another account's
      // message (or to an outbound one), so it cannot be this customer's message.
      throw new ApiError('inbound_wamid_taken');
    }
    throw err;
  }
  s.dispatcher.wake();
  s.metrics.messageReceived(social ? 'instagram' : 'whatsapp');
  if (stored.wakeAutomations) s.automations.wake();
  if (stored.wakeAgents) s.agents.wake();
  if (stored.wakeClassifier) wakeClassifier(s);
  // GET /me counts the account's contacts; nothing else it shows moves with a message.
  if (stored.contactCreated) s.accountViews.changed(input.accountId);
  return stored.result;
}
