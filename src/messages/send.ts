// Sending a message (api.md §4 POST /messages): used by the route, by campaigns and, with an
// origin, by team replies (and the automation engine).
// validate → number → template → contact (limit) → conversation → 24-hour window → store `pending`
// (commit) → provider.send outside any transaction → store wamid and `sent` → apply early reports.

import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import { endStretchByTeam } from '../agents/stretches.js';
import { cancelRunning } from '../automations/cancel.js';
import { answererOf, recordAnswer } from '../cases/handled-by.js';
import { lockOpenCase } from '../cases/open.js';
import { sendInstagram } from '../channel/instagram/send.js';
import { throughputBusyError, throughputBusyReason } from '../channel/paced.js';
import { ProviderError, ThroughputBusy } from '../channel/types.js';
import { contactForSend, getContact, markMarketingOptOut } from '../contacts/service.js';
import { conversationFor, getConversationRow, setHandling, touchInboundWindow, windowOpen } from '../conversations/service.js';
import type { Db, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, MessageRow, MessagesTable, PhoneNumberRow, TemplateRow, TemplateVariable } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { providerReason, textFor } from '../http/messages.es-AR.js';
import { isUuid, newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import type { Services } from '../services.js';
import { applyEarlyStatuses, MARKETING_BLOCKED } from './status.js';
import { type MessageRecord, messageView } from './view.js';

export interface SendInput {
  to: string;
  text?: string;
  template?: { id: string; variables?: Record<string, string> };
  phoneNumberId?: string;
  /** Set by campaigns (source `campaign`). */
  campaignId?: string;
  /** Who writes when it is not the API: an automation, an AI agent or a team member. */
  origin?: SendOrigin;
  /** A connected AI app sending through the API's rules (source `api`): kept as the message's sender. */
  app?: { id: string; name: string };
}

export interface SendOrigin {
  source: 'automation' | 'agent' | 'team';
  by?: { id?: string | null; name: string };
  /**
   * Runs inside the transaction that stores the message, after its insert: an automation records
   * its step as started there (docs/automations.md "Durability"), so the step's start and the
   * message commit together, before the provider call. Throwing rolls the message back.
   */
  inTransaction?: (trx: Trx, messageId: string) => Promise<void>;
}

/**
 * Inside the send transaction, after the conversation's lock and before the message insert: the
 * open case (locked) records who answered it (handledBy). Returns the open case id, or null.
 */
async function recordAnswerer(trx: Trx, conversationId: string, origin: SendOrigin, now: Date): Promise<string | null> {
  const open = await lockOpenCase(trx, conversationId);
  if (!open) return null;
  const agent = origin.source === 'agent' && origin.by?.id ? { id: origin.by.id, name: origin.by.name } : undefined;
  await recordAnswer(trx, open, answererOf(origin.source), now, agent);
  return open.id;
}

/**
 * After the message insert, a team member's reply takes the conversation over: its running
 * execution is cancelled, its agent's stretch ends ("Intervino el equipo") and the conversation
 * shows the team as handling it while the case lasts. Returns whether a stretch ended.
 */
async function teamTakesOver(trx: Trx, conversationId: string, by: SendOrigin['by'], openCaseId: string | null, now: Date) {
  await cancelRunning(trx, { conversationId }, now);
  await setHandling(trx, conversationId, { type: 'team', id: by?.id ?? null, name: by?.name ?? '', caseId: openCaseId });
  return (await endStretchByTeam(trx, conversationId, now)) !== null;
}

/**
 * The number a send leaves from: the given one (unknown or another account's → 409, not
 * connected → 409), else the account's default number, or its oldest connected one when the
 * default is disconnected (decisions.md "Endpoints": none connected → 409).
 */
export async function numberForSend(db: Db, accountId: string, phoneNumberId?: string): Promise<PhoneNumberRow> {
  if (phoneNumberId !== undefined) {
    // api.md §7: "no connected number with the given phoneNumberId" → 409, whatever its form.
    if (!isUuid(phoneNumberId)) throw new ApiError('phone_number_unknown');
    const n = await db
      .selectFrom('phone_numbers')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', phoneNumberId)
      .executeTakeFirst();
    if (!n) throw new ApiError('phone_number_unknown');
    if (n.status !== 'connected') throw new ApiError('phone_number_disconnected');
    return n;
  }
  const n = await db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('status', '=', 'connected')
    .orderBy('is_default', 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
  if (!n) throw new ApiError('no_connected_number');
  return n;
}

/** A template that can be sent: it exists, is not deleted (404) and is APPROVED (409). */
export async function templateForSend(db: Db, accountId: string, id: string): Promise<TemplateRow> {
  const t = await db.selectFrom('templates').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  if (!t || t.deleted_at) throw new ApiError('template_not_found');
  if (t.status !== 'APPROVED') throw new ApiError('template_not_approved', { params: { name: t.name, status: t.status } });
  return t;
}

const has = (o: Record<string, string>, k: string): boolean => Object.hasOwn(o, k) && typeof o[k] === 'string' && o[k].trim() !== '';

/**
 * Each of the template's variables in its order: the value sent, else the contact's attribute of
 * that name, else the template's example (api.md §4). A blank value counts as missing (the
 * channel refuses empty parameters); keys the template does not have are ignored.
 */
export function resolveVariables(
  variables: TemplateVariable[],
  given: Record<string, string>,
  attributes: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of variables) {
    out[v.name] = has(given, v.name) ? given[v.name]! : has(attributes, v.name) ? attributes[v.name]! : (v.example ?? '');
  }
  return out;
}

/** Returns the Message record (decisions.md "Message record"), with status `sent`. */
export async function sendMessage(s: Services, account: AccountRow, input: SendInput): Promise<MessageRecord> {
  if (input.text !== undefined && input.template !== undefined) throw invalid(['template'], textFor('send_not_both'));
  if (input.text === undefined && input.template === undefined) throw invalid(['text'], textFor('send_text_or_template'));
  if (input.text !== undefined && input.text.trim() === '') throw invalid(['text'], textFor('text_blank'));
  const phone = canonicalPhone(input.to);
  if (!phone.ok) throw invalid(['to'], phone.message);

  const number = await numberForSend(s.db, account.id, input.phoneNumberId);
  const template = input.template ? await templateForSend(s.db, account.id, input.template.id) : null;

  const now = s.clock.now();
  // Contact, then conversation, then the message (docs/architecture.md "Lock order"); nothing
  // here leaves the database, so a deadlock can run it again.
  const written = await transaction(s.db, async (trx) => {
    const { contact, created } = await contactForSend(trx, account, phone.phone, now);
    const conversation = await conversationFor(trx, { accountId: account.id, contactId: contact.id, phoneNumberId: number.id }, now);
    // Free text only within 24 h of the contact's last inbound message (api.md §3).
    if (!template && !windowOpen(conversation, now)) throw new ApiError('window_closed');
    // Our decision (api.md is silent for API sends): a contact who asked for no more messages
    // gets no template (409), like a campaign skips it; free text inside the window is still
    // allowed, so a business can answer a customer who writes again (or confirm the opt-out).
    if (template && contact.opted_out) throw new ApiError('send_opted_out');
    const variables = template ? resolveVariables(template.variables, input.template?.variables ?? {}, contact.attributes) : null;
    const message = await insertOutbound(
      trx,
      {
        account_id: account.id,
        conversation_id: conversation.id,
        contact_id: contact.id,
        phone_number_id: number.id,
        type: template ? 'template' : 'text',
        text: template ? null : (input.text ?? null),
        template_id: template?.id ?? null,
        template_name: template?.name ?? null,
        template_variables: variables ? JSON.stringify(variables) : null,
        to_phone: phone.phone,
        campaign_id: input.campaignId ?? null,
        source: input.origin?.source ?? (input.campaignId ? 'campaign' : 'api'),
        ...(input.app ? { sent_by: JSON.stringify({ type: 'ai_app', id: input.app.id, name: input.app.name }) } : {}),
      },
      input.origin,
      now,
    );
    return { message, contactCreated: created };
  });
  const pending = written.message;
  // GET /me counts the account's contacts.
  if (written.contactCreated) s.accountViews.changed(account.id);

  const provider = s.channels.get(number.provider);
  const vars = pending.template_variables ?? {};
  return deliver(s, pending, async () => {
    const sent = await provider.send({
      messageId: pending.id,
      from: number,
      to: phone.phone,
      ...(template
        ? {
            template: {
              id: template.id,
              name: template.name,
              language: template.language,
              category: template.category,
              parameters: template.variables.map((v) => vars[v.name] ?? ''),
              variables: template.variables,
            },
          }
        : { text: pending.text ?? '' }),
    });
    return sent.wamid;
  });
}

/**
 * Inside a send's transaction, after the contact's and the conversation's locks: the outbound
 * message, `pending`, with who wrote it. A send of an automation, an agent or the team records
 * who answered the open case first, the team's takes the conversation over after the insert, and
 * `origin.inTransaction` runs last (docs/architecture.md "Lock order").
 */
async function insertOutbound(
  trx: Trx,
  values: Omit<Insertable<MessagesTable>, 'id' | 'direction' | 'status' | 'created_at' | 'updated_at'>,
  origin: SendOrigin | undefined,
  now: Date,
): Promise<MessageRow> {
  const conversationId = values.conversation_id;
  const openCaseId = origin ? await recordAnswerer(trx, conversationId, origin, now) : null;
  const message = await trx
    .insertInto('messages')
    .values({
      ...values,
      id: newId(),
      direction: 'outbound',
      status: 'pending',
      ...(origin?.by ? { sent_by: JSON.stringify({ id: origin.by.id ?? null, name: origin.by.name }) } : {}),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (origin?.source === 'team') await teamTakesOver(trx, conversationId, origin.by, openCaseId, now);
  if (origin?.inTransaction) await origin.inTransaction(trx, message.id);
  return message;
}

/**
 * The provider call of a stored `pending` message, outside any transaction, then its provider id
 * and `sent` (or `failed` with the provider's reason, answered as the matching error).
 */
async function deliver(s: Services, pending: MessageRow, call: () => Promise<string>, social = false): Promise<MessageRecord> {
  let wamid: string;
  try {
    wamid = await call();
  } catch (err) {
    throw await failAtSend(s, pending, err, social);
  }
  const at = s.clock.now();
  const stored = await s.db
    .updateTable('messages')
    .set({ wamid, status: 'sent', sent_at: at, updated_at: at })
    .where('id', '=', pending.id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirstOrThrow();
  // The 201 shows the status at acceptance (`sent`); reports that came first apply right after
  // (looked for after this commit: a report kept meanwhile is found by one side or the other).
  await applyEarlyStatuses(s, wamid);
  return messageView(stored);
}

/** A send in one conversation (a team member, an agent, an automation): text, or a template on WhatsApp. */
export interface ConversationSend {
  conversationId: string;
  text?: string;
  template?: { id: string; variables?: Record<string, string> };
  origin: SendOrigin;
  /**
   * Instagram: answer this comment with a private reply (`recipient: {comment_id}`) instead of a
   * direct message — a comment automation's first send. Not bound to the 24-hour window; once it
   * is out, the conversation is open.
   */
  commentId?: string | null | undefined;
  /**
   * What the caller already read (an execution, an agent's stretch): the conversation's number
   * (null: not a WhatsApp conversation) and its contact's phone. A WhatsApp send then reads
   * nothing more before sendMessage.
   */
  known?: { phoneNumberId: string | null; phone: string | null };
}

/**
 * Answers in a conversation on its own channel (docs/instagram.md "Outbound"): WhatsApp through
 * sendMessage from the conversation's number; the social channel (Instagram Direct) as a text to
 * the contact's Instagram-scoped id through the conversation's social account, with the same
 * 24-hour window, the same record of who answered, and no templates (Instagram has none).
 */
export async function sendInConversation(s: Services, account: AccountRow, input: ConversationSend): Promise<MessageRecord> {
  const content = input.text !== undefined ? { text: input.text } : input.template ? { template: input.template } : {};
  const known = input.known;
  if (known?.phoneNumberId && known.phone) {
    return sendMessage(s, account, { to: known.phone, phoneNumberId: known.phoneNumberId, ...content, origin: input.origin });
  }
  const conversation = await getConversationRow(s.db, account.id, input.conversationId);
  const contact = await getContact(s.db, account.id, conversation.contact_id);
  if (conversation.channel === 'whatsapp') {
    if (!contact.phone || !conversation.phone_number_id) throw new ApiError('conversation_no_phone');
    return sendMessage(s, account, { to: contact.phone, phoneNumberId: conversation.phone_number_id, ...content, origin: input.origin });
  }
  if (input.template) throw new ApiError('social_template');
  if (input.text === undefined || input.text.trim() === '') throw invalid(['text'], textFor('text_blank'));
  const social = conversation.social_account_id
    ? await s.db.selectFrom('social_accounts').selectAll().where('id', '=', conversation.social_account_id).executeTakeFirst()
    : undefined;
  if (!social || social.deleted_at !== null || social.status !== 'connected' || !contact.socialchat_id) {
    throw new ApiError('social_account_unavailable');
  }
  const text = input.text;
  const commentId = input.commentId ?? null;
  const now = s.clock.now();
  // The contact, then the conversation, then the message (docs/architecture.md "Lock order").
  const pending = await transaction(s.db, async (trx) => {
    await trx.selectFrom('contacts').select('id').where('id', '=', contact.id).forNoKeyUpdate().execute();
    const conv = await trx
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', conversation.id)
      .forNoKeyUpdate()
      .executeTakeFirstOrThrow();
    if (commentId === null && !windowOpen(conv, now)) throw new ApiError('social_window_closed');
    return insertOutbound(
      trx,
      {
        account_id: account.id,
        conversation_id: conv.id,
        contact_id: contact.id,
        phone_number_id: null,
        type: 'text',
        text,
        to_phone: null,
        source: input.origin.source,
      },
      input.origin,
      now,
    );
  });
  const userId = contact.socialchat_id;
  const sent = await deliver(
    s,
    pending,
    async () => {
      if (social.provider !== 'instagram') return `mid.SBX${randomUUID().replace(/-/g, '').toUpperCase()}`;
      const r = await sendInstagram(
        {
          baseUrl: s.config.INSTAGRAM_API_URL,
          igUserId: social.ig_user_id ?? '',
          accessToken: social.access_token ?? '',
          timeoutMs: s.config.GRAPH_TIMEOUT_MS,
        },
        commentId !== null ? { commentId } : { userId },
        text,
      );
      return r.mid;
    },
    true,
  );
  // The private reply is out: the conversation is open (spec social.md "Comment").
  if (commentId !== null) await touchInboundWindow(s.db, conversation.id, now);
  return sent;
}

/** Marks the message failed with the provider's code and reason, and returns the error to answer. */
async function failAtSend(s: Services, pending: { id: string; contact_id: string }, err: unknown, social = false): Promise<ApiError> {
  const messageId = pending.id;
  // No slot of the number in time: it never went out; failed with our reason, answered 429 (channel/paced.ts).
  const busy = err instanceof ThroughputBusy ? err : null;
  const pe =
    err instanceof ProviderError
      ? err
      : new ProviderError('temporary', busy ? throughputBusyReason(busy) : providerReason('unexpected'), null);
  if (!(err instanceof ProviderError) && !busy) s.log.error({ err, messageId }, 'channel provider failed unexpectedly');
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    // 131050 at send (the provider may answer it synchronously): the contact blocks marketing.
    // The contact before its message (docs/architecture.md "Lock order").
    if (pe.code === MARKETING_BLOCKED) await markMarketingOptOut(trx, pending.contact_id, now);
    await trx
      .updateTable('messages')
      .set({ status: 'failed', code: pe.code, error: pe.reason, failed_at: now, updated_at: now })
      .where('id', '=', messageId)
      .execute();
  });
  if (busy) return throughputBusyError(busy, messageId);
  const opts = { params: { reason: pe.reason }, extra: { code: pe.code, messageId } };
  switch (pe.kind) {
    case 'window':
      // Instagram has no templates to suggest.
      return new ApiError(social ? 'provider_window_social' : 'provider_window', opts);
    case 'template':
      return new ApiError('provider_template', opts);
    case 'temporary':
      return new ApiError('provider_temporary', opts);
    default:
      return new ApiError('provider_rejected', opts);
  }
}
