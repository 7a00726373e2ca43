// Sending a message (api.md §4 POST /messages): used by the route, by campaigns and, with an
// origin, by team replies (and the automation engine).
// validate → number and template (send-from.ts: this process's copy, else one read) → contact (limit) → conversation →
// 24-hour window or opt-out → store `pending` (send-store.ts: one statement; a transaction only
// with an origin or a new contact under a contact limit) → provider.send outside any transaction
// → store wamid and `sent` → apply early reports.

import { throughputBusyError, throughputBusyReason } from '../channel/paced.js';
import { ProviderError, ThroughputBusy } from '../channel/types.js';
import { getContact, markMarketingOptOut } from '../contacts/service.js';
import { getConversationRow, touchInboundWindow, windowOpen } from '../conversations/service.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, MessageRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { providerReason, textFor } from '../http/messages.es-AR.js';
import { newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import { effectiveLimits } from '../limits/plans.js';
import type { Services } from '../services.js';
import { providerApiError } from './batch.js';
import { admitAutomatedSend, checkTemplateVariables, checkTextLength } from './outbound-guard.js';
import { senderFor } from './send-from.js';
import { insertOutbound, type SendInput, type SendOrigin, type SendWrite, writeAlone, writeWithOrigin } from './send-store.js';
import { applyEarlyStatuses, MARKETING_BLOCKED } from './status.js';
import { type MessageRecord, messageView } from './view.js';

/** Returns the Message record (decisions.md "Message record"), with status `sent`. */
export async function sendMessage(s: Services, account: AccountRow, input: SendInput): Promise<MessageRecord> {
  if (input.text !== undefined && input.template !== undefined) throw invalid(['template'], textFor('send_not_both'));
  if (input.text === undefined && input.template === undefined) throw invalid(['text'], textFor('send_text_or_template'));
  if (input.text !== undefined && input.text.trim() === '') throw invalid(['text'], textFor('text_blank'));
  if (input.text !== undefined) checkTextLength(input.text, 'whatsapp');
  if (input.template?.variables) checkTemplateVariables(input.template.variables);
  const phone = canonicalPhone(input.to);
  if (!phone.ok) throw invalid(['to'], phone.message);

  const { number, template } = await senderFor(s.db, account.id, input.phoneNumberId, input.template?.id, s.hotReads);

  const now = s.clock.now();
  const write: SendWrite = {
    account,
    phone: phone.phone,
    number,
    template,
    input,
    now,
    limited: effectiveLimits(account.plan, account.limits).contacts !== null,
  };
  const { message: pending, created } = input.origin ? await writeWithOrigin(s.db, write, input.origin) : await writeAlone(s.db, write);
  // GET /me counts the account's contacts.
  if (created) s.accountViews.changed(account.id);

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
    s.metrics.messageSent('whatsapp', number.provider);
    return sent.wamid;
  });
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
  // The row as the update leaves it, so its `message.sent` for the console's live inbox
  // (console/bus.ts) rides in the same statement: written only for accounts with an active member.
  const record = messageView({ ...pending, wamid, status: 'sent', sent_at: at, updated_at: at });
  // Written with the other sends of this turn (messages/sent-marks.ts). The same statement asks
  // whether a report came first (early_statuses): nearly every send finds none, and then its `sent`
  // costs no round trip of its own. A report kept while this statement runs is not seen by it (its
  // snapshot is older) but is not lost: one carrying our message id (every Cloud send's and the
  // sandbox's) waits for this row's lock in reconcileInTrx and, finding it `sent`, is kept and
  // applied by its own look after its commit, which sees this one; one without it is applied by
  // the `case-timeouts` job's sweep (messages/status.ts).
  const outcome = await s.sentMarks.mark({ messageId: pending.id, wamid, at, eventId: newId(), record: JSON.stringify(record) });
  // The 201 shows the status at acceptance (`sent`); reports that came first apply right after.
  if (outcome.updated) {
    if (outcome.early) await applyEarlyStatuses(s, wamid);
    return record;
  }
  const moved = await alreadyMoved(s, pending.id, wamid);
  await applyEarlyStatuses(s, wamid);
  return messageView(moved);
}

/**
 * The message left `pending` while its provider call was out: a status report carrying our message
 * id reconciled it first (messages/status.ts reconcileInTrx, with this same wamid: its event is
 * written), or the `reconcile-sends` job failed it. Answered as it is now, never as an error.
 */
async function alreadyMoved(s: Services, messageId: string, wamid: string): Promise<MessageRow> {
  const current = await s.db.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirstOrThrow();
  if (current.wamid !== wamid) s.log.warn({ messageId, status: current.status }, 'send answered after its message was settled without it');
  return current;
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
  // An automation's or an agent's send takes the account's message minute cap first (outbound-guard.ts).
  await admitAutomatedSend(s, account, input.origin.source);
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
  checkTextLength(input.text, 'instagram');
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
  const provider = s.channels.social(social.provider);
  const to = commentId !== null ? { commentId } : { userId: contact.socialchat_id };
  const sent = await deliver(
    s,
    pending,
    async () => {
      const r = await provider.send({ messageId: pending.id, from: social, to, text });
      s.metrics.messageSent('instagram', social.provider);
      return r.wamid;
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
      : new ProviderError('temporary', busy ? throughputBusyReason(busy, social) : providerReason('unexpected'), null);
  if (!(err instanceof ProviderError) && !busy) s.log.error({ err, messageId }, 'channel provider failed unexpectedly');
  s.metrics.messageFailed(social ? 'instagram' : 'whatsapp', err instanceof ProviderError ? 'provider' : 'ours');
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    // 131050 at send (the provider may answer it synchronously): the contact blocks marketing.
    // The contact before its message (docs/architecture.md "Lock order").
    if (pe.code === MARKETING_BLOCKED) await markMarketingOptOut(trx, pending.contact_id, now);
    await trx
      .updateTable('messages')
      .set({ status: 'failed', code: pe.code, error: pe.reason, failed_at: now, updated_at: now })
      .where('id', '=', messageId)
      // A status report may have reconciled it meanwhile (the provider took it after all): that stands.
      .where('status', '=', 'pending')
      .execute();
  });
  if (busy) return throughputBusyError(busy, messageId, social);
  return providerApiError(pe, messageId, social);
}
