// Sending a message (api.md §4 POST /messages): used by the route, by campaigns and, with an
// origin, by team replies (and the automation engine).
// validate → number and template (one read) → contact (limit) → conversation → 24-hour window or
// opt-out → store `pending` (one statement; a transaction only with an origin or a new contact
// under a contact limit) → provider.send outside any transaction → store wamid and `sent` → apply
// early reports.

import { randomUUID } from 'node:crypto';
import { type Insertable, sql } from 'kysely';
import { endStretchByTeam } from '../agents/stretches.js';
import { cancelRunning } from '../automations/cancel.js';
import { answererOf, recordAnswer } from '../cases/handled-by.js';
import { lockOpenCase } from '../cases/open.js';
import { sendInstagram } from '../channel/instagram/send.js';
import { throughputBusyError, throughputBusyReason } from '../channel/paced.js';
import { ProviderError, ThroughputBusy } from '../channel/types.js';
import { assertContactRoom, getContact, markMarketingOptOut, sendContactCtes } from '../contacts/service.js';
import {
  getConversationRow,
  sendConversationCtes,
  setHandling,
  touchInboundWindow,
  WINDOW_MS,
  windowOpen,
} from '../conversations/service.js';
import type { Db, Executor, Trx } from '../db/index.js';
import { type JsonRow, withDates } from '../db/json-row.js';
import { retrying, transaction } from '../db/retry.js';
import type { AccountRow, MessageRow, MessagesTable, PhoneNumberRow, TemplateRow, TemplateVariable } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { providerReason, textFor } from '../http/messages.es-AR.js';
import { isUuid, newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import { effectiveLimits } from '../limits/plans.js';
import type { Services } from '../services.js';
import { providerApiError } from './batch.js';
import { admitAutomatedSend, checkTemplateVariables, checkTextLength } from './outbound-guard.js';
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
  return (await senderFor(db, accountId, phoneNumberId)).number;
}

/** A template that can be sent: it exists, is not deleted (404) and is APPROVED (409). */
export async function templateForSend(db: Db, accountId: string, id: string): Promise<TemplateRow> {
  const t = isUuid(id)
    ? await db.selectFrom('templates').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
    : undefined;
  return checkTemplate(t);
}

function checkTemplate(t: TemplateRow | undefined): TemplateRow {
  if (!t || t.deleted_at) throw new ApiError('template_not_found');
  if (t.status !== 'APPROVED') throw new ApiError('template_not_approved', { params: { name: t.name, status: t.status } });
  return t;
}

/**
 * numberForSend and, when `templateId` is given, templateForSend in one statement (one round
 * trip): the number's refusals first, then the template's.
 */
async function senderFor(
  db: Db,
  accountId: string,
  phoneNumberId: string | undefined,
  templateId?: string,
): Promise<{ number: PhoneNumberRow; template: TemplateRow | null }> {
  // api.md §7: "no connected number with the given phoneNumberId" → 409, whatever its form.
  if (phoneNumberId !== undefined && !isUuid(phoneNumberId)) throw new ApiError('phone_number_unknown');
  const number =
    phoneNumberId !== undefined
      ? sql`SELECT to_jsonb(n) FROM phone_numbers n WHERE account_id = ${accountId} AND id = ${phoneNumberId}`
      : sql`SELECT to_jsonb(n) FROM phone_numbers n WHERE account_id = ${accountId} AND status = 'connected'
            ORDER BY is_default DESC, created_at, id LIMIT 1`;
  const template =
    templateId === undefined
      ? sql`NULL::jsonb`
      : isUuid(templateId)
        ? sql`(SELECT to_jsonb(t) FROM templates t WHERE account_id = ${accountId} AND id = ${templateId})`
        : sql`NULL::jsonb`;
  const { rows } = await sql<{ number: JsonRow | null; template: JsonRow | null }>`
    SELECT (${number}) AS number, ${template} AS template`.execute(db);
  const n = rows[0]?.number ? withDates<PhoneNumberRow>(rows[0].number, ['created_at']) : undefined;
  if (!n) throw new ApiError(phoneNumberId !== undefined ? 'phone_number_unknown' : 'no_connected_number');
  if (n.status !== 'connected') throw new ApiError('phone_number_disconnected');
  if (templateId === undefined) return { number: n, template: null };
  const t = rows[0]?.template ? withDates<TemplateRow>(rows[0].template, ['created_at', 'updated_at', 'deleted_at']) : undefined;
  return { number: n, template: checkTemplate(t) };
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
  if (input.text !== undefined) checkTextLength(input.text, 'whatsapp');
  if (input.template?.variables) checkTemplateVariables(input.template.variables);
  const phone = canonicalPhone(input.to);
  if (!phone.ok) throw invalid(['to'], phone.message);

  const { number, template } = await senderFor(s.db, account.id, input.phoneNumberId, input.template?.id);

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
  const { message: pending, created } = input.origin ? await writeWithOrigin(s, write, input.origin) : await writeAlone(s, write);
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

/** What a send writes: the contact, its conversation and the message (docs/architecture.md "Send"). */
interface SendWrite {
  account: AccountRow;
  phone: string;
  number: PhoneNumberRow;
  template: TemplateRow | null;
  input: SendInput;
  now: Date;
  /** The plan limits contacts: a new one needs the account's lock and count first (assertContactRoom). */
  limited: boolean;
}

interface Written {
  contactId: string | null;
  created: boolean;
  optedOut: boolean;
  /** The contact's attributes (read only without the message: the origin's send resolves its variables). */
  attributes: Record<string, string>;
  conversationId: string | null;
  lastInboundAt: Date | null;
  /** The message stored `pending`; null when the send is refused (or not inserted by the statement). */
  message: MessageRow | null;
}

/** Every character String.prototype.trim removes: a variable value is blank when only these remain. */
const TRIMMED = Array.from({ length: 0x10000 }, (_, c) => String.fromCharCode(c))
  .filter((ch) => ch.trim() === '')
  .join('');

/**
 * The contact (locked, or created), its conversation (locked, or created) and, with `withMessage`,
 * the message `pending`, in one statement: the lock order of docs/architecture.md ("Lock order")
 * holds inside it (the contact's row lock is taken before the conversation's is looked for). The
 * message is inserted only when the send is allowed: free text within 24 h of the contact's last
 * inbound message (api.md §3), a template to a contact who did not opt out (`send_opted_out`);
 * a send that would be refused creates no contact nor conversation, so a refusal leaves nothing
 * behind even outside a transaction. Template variables resolve in the statement as
 * resolveVariables does: the value sent, else the contact's attribute, else the example.
 */
async function storeSend(db: Executor, w: SendWrite, withMessage: boolean, accountLocked = false): Promise<Written> {
  const { account, template, input, now } = w;
  const allowed = template ? sql`NOT c.opted_out` : sql`v.last_inbound_at > ${new Date(now.getTime() - WINDOW_MS)}::timestamptz`;
  const ctes = [
    // Free text never goes to a new contact: its conversation would have no inbound message.
    sendContactCtes(account.id, w.phone, now, template !== null && (!w.limited || accountLocked)),
    // Free text never opens a conversation: a new one has no inbound message, its window is closed.
    sendConversationCtes(account.id, w.number.id, now, template ? sql`NOT (SELECT opted_out FROM send_contact)` : sql`false`),
  ];
  if (withMessage) {
    const given = input.template?.variables ?? {};
    const spec = template?.variables.map((v) => ({
      name: v.name,
      given: has(given, v.name) ? given[v.name] : null,
      example: v.example ?? '',
    }));
    const variables = spec
      ? sql`(SELECT COALESCE(jsonb_object_agg(x.name, CASE
              WHEN x.given IS NOT NULL THEN x.given
              WHEN btrim(c.attributes->>x.name, ${TRIMMED}) <> '' THEN c.attributes->>x.name
              ELSE x.example END), '{}'::jsonb)
            FROM jsonb_to_recordset(${JSON.stringify(spec)}::jsonb) AS x(name text, given text, example text))`
      : sql`NULL::jsonb`;
    const sentBy = input.app ? JSON.stringify({ type: 'ai_app', id: input.app.id, name: input.app.name }) : null;
    ctes.push(sql`
  send_message AS (
    INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, direction, type, text, template_id,
      template_name, template_variables, to_phone, campaign_id, source, sent_by, status, created_at, updated_at)
    SELECT ${newId()}::uuid, ${account.id}::uuid, v.id, c.id, ${w.number.id}::uuid, 'outbound', ${template ? 'template' : 'text'}::text,
      ${template ? null : (input.text ?? null)}::text, ${template?.id ?? null}::uuid, ${template?.name ?? null}::text, ${variables},
      ${w.phone}::text, ${input.campaignId ?? null}::uuid, ${input.campaignId ? 'campaign' : 'api'}::text, ${sentBy}::jsonb, 'pending',
      ${now}::timestamptz, ${now}::timestamptz
    FROM send_contact c, send_conversation v
    WHERE ${allowed}
    RETURNING *
  )`);
  }
  const { rows } = await sql<
    MessageRow & {
      s_contact_id: string | null;
      s_created: boolean | null;
      s_opted_out: boolean | null;
      s_attributes: Record<string, string> | null;
      s_conversation_id: string | null;
      s_last_inbound_at: Date | null;
    }
  >`
    WITH ${sql.join(ctes)}
    SELECT c.id AS s_contact_id, c.inserted AS s_created, c.opted_out AS s_opted_out,
      v.id AS s_conversation_id, v.last_inbound_at AS s_last_inbound_at,
      ${withMessage ? sql`m.*` : sql`c.attributes AS s_attributes`}
    FROM (SELECT 1) one
      LEFT JOIN send_contact c ON true
      LEFT JOIN send_conversation v ON true
      ${withMessage ? sql`LEFT JOIN send_message m ON true` : sql``}`.execute(db);
  const r = rows[0]!;
  const { s_contact_id, s_created, s_opted_out, s_attributes, s_conversation_id, s_last_inbound_at, ...message } = r;
  return {
    contactId: s_contact_id,
    created: s_created === true,
    optedOut: s_opted_out === true,
    attributes: s_attributes ?? {},
    conversationId: s_conversation_id,
    lastInboundAt: s_last_inbound_at,
    message: withMessage && message.id ? message : null,
  };
}

/**
 * A send without an origin (the API, a campaign): one statement, no transaction. Only a new
 * contact under a contact limit takes a transaction: the account's lock and count
 * (assertContactRoom), then the same statement.
 */
async function writeAlone(s: Services, w: SendWrite): Promise<{ message: MessageRow; created: boolean }> {
  let written = await retrying(() => storeSend(s.db, w, true));
  if (written.contactId === null && w.limited) {
    written = await transaction(s.db, async (trx) => {
      await assertContactRoom(trx, w.account);
      return storeSend(trx, w, true, true);
    });
  }
  const message = written.message ?? refusal(w, written);
  return { message, created: written.created };
}

/**
 * A send of an automation, an agent or the team: the contact and its conversation in one
 * statement, then the origin's records and the message (insertOutbound), in one transaction.
 */
async function writeWithOrigin(s: Services, w: SendWrite, origin: SendOrigin): Promise<{ message: MessageRow; created: boolean }> {
  const { account, template, input, now } = w;
  return transaction(s.db, async (trx) => {
    let written = await storeSend(trx, w, false);
    if (written.contactId === null && w.limited) {
      await assertContactRoom(trx, account);
      written = await storeSend(trx, w, false, true);
    }
    const allowed = template
      ? !written.optedOut
      : written.lastInboundAt !== null && windowOpen({ last_inbound_at: written.lastInboundAt }, now);
    if (!allowed || written.contactId === null || written.conversationId === null) refusal(w, written);
    const variables = template ? resolveVariables(template.variables, input.template?.variables ?? {}, written.attributes) : null;
    const message = await insertOutbound(
      trx,
      {
        account_id: account.id,
        conversation_id: written.conversationId!,
        contact_id: written.contactId!,
        phone_number_id: w.number.id,
        type: template ? 'template' : 'text',
        text: template ? null : (input.text ?? null),
        template_id: template?.id ?? null,
        template_name: template?.name ?? null,
        template_variables: variables ? JSON.stringify(variables) : null,
        to_phone: w.phone,
        campaign_id: input.campaignId ?? null,
        source: origin.source,
        ...(input.app ? { sent_by: JSON.stringify({ type: 'ai_app', id: input.app.id, name: input.app.name }) } : {}),
      },
      origin,
      now,
    );
    return { message, created: written.created };
  });
}

/**
 * Why a send was not stored: free text outside the 24-hour window (api.md §3), or a template to a
 * contact who asked for no more messages. Our decision (api.md is silent for API sends): that
 * contact gets no template (409), like a campaign skips it; free text inside the window is still
 * allowed, so a business can answer a customer who writes again (or confirm the opt-out).
 */
function refusal(w: SendWrite, written: Written): never {
  if (!w.template) throw new ApiError('window_closed');
  if (written.optedOut) throw new ApiError('send_opted_out');
  throw new Error('send: no contact or conversation stored for a template');
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
  const stored =
    (await s.db
      .updateTable('messages')
      .set({ wamid, status: 'sent', sent_at: at, updated_at: at })
      .where('id', '=', pending.id)
      .where('status', '=', 'pending')
      .where('wamid', 'is', null)
      .returningAll()
      .executeTakeFirst()) ?? (await alreadyMoved(s, pending.id, wamid));
  // The 201 shows the status at acceptance (`sent`); reports that came first apply right after
  // (looked for after this commit: a report kept meanwhile is found by one side or the other).
  await applyEarlyStatuses(s, wamid);
  return messageView(stored);
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
          observe: (seconds) => s.metrics.providerRequest('instagram', 'send', seconds),
        },
        commentId !== null ? { commentId } : { userId },
        text,
      );
      return r.mid;
    },
    true,
  );
  s.metrics.messageSent('instagram', social.provider);
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
  if (busy) return throughputBusyError(busy, messageId);
  return providerApiError(pe, messageId, social);
}
