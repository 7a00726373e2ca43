// What a send writes (docs/architecture.md "Send"): the contact, its conversation and the message
// `pending`, in one statement (storeSend); a send with an origin also records who answered the
// open case in that statement, and runs `origin.inTransaction` after it in the same transaction.
// The provider call comes after, outside (send.ts).
import { type Insertable, type RawBuilder, sql } from 'kysely';
import { answererOf, recordAnswer, recordAnswerCtes } from '../cases/handled-by.js';
import { assertContactRoom, sendContactCtes } from '../contacts/service.js';
import { sendConversationCtes, WINDOW_MS } from '../conversations/service.js';
import type { Db, Executor, Trx } from '../db/index.js';
import { retrying, transaction } from '../db/retry.js';
import type { AccountRow, MessageRow, MessagesTable, PhoneNumberRow, TemplateRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { has } from './send-from.js';

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
  by?: { type?: 'member'; id?: string | null; name: string };
  /**
   * Runs inside the transaction that stores the message, after its insert: an automation records
   * its step as started there (docs/automations.md "Durability"), so the step's start and the
   * message commit together, before the provider call; a team member's reply takes the
   * conversation over (conversations/team.ts). Throwing rolls the message back.
   */
  inTransaction?: (trx: Trx, messageId: string, stored: StoredSend) => Promise<void>;
  /**
   * What `inTransaction` writes, as CTEs of the send's one statement instead (no transaction: one
   * round trip), when the origin can: they run after the open case's lock and only when the send is
   * allowed (`gate`), before the message's insert. The message is inserted, and the case records
   * who answered, only when the CTE `rows` has a row; when it has none, `lost()` is thrown: no
   * message, no change of the case, none of the origin's rows (a template's new contact and its
   * conversation stay, as a later send would make them). Left out when this send needs the
   * transaction (inTransaction).
   */
  composed?: ((gate: RawBuilder<unknown>) => ComposedOrigin) | undefined;
}

/** An origin's writes composed into the send's statement (SendOrigin.composed). */
export interface ComposedOrigin {
  ctes: RawBuilder<unknown>;
  rows: string;
  lost: () => Error;
}

/** What the send's transaction holds when `origin.inTransaction` runs. */
export interface StoredSend {
  conversationId: string;
  /** The conversation's open case (locked; it records who answered), or null. */
  openCaseId: string | null;
  now: Date;
}

/** The AI agent a send of an agent names on the open case (agents.md "while an agent works the case"). */
const agentOf = (origin: SendOrigin) =>
  origin.source === 'agent' && origin.by?.id ? { id: origin.by.id, name: origin.by.name } : undefined;

/** A message's `sent_by`: who wrote it (an origin's author), else the AI app that sent it through the API. */
function sentByOf(origin: SendOrigin | undefined, app: SendInput['app']): string | null {
  if (origin?.by) {
    const by = origin.by;
    return JSON.stringify({ ...(by.type ? { type: by.type } : {}), id: by.id ?? null, name: by.name });
  }
  return app ? JSON.stringify({ type: 'ai_app', id: app.id, name: app.name }) : null;
}

/** What a send writes: the contact, its conversation and the message (docs/architecture.md "Send"). */
export interface SendWrite {
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
  conversationId: string | null;
  lastInboundAt: Date | null;
  /** The message stored `pending`; null when the send is refused (or not inserted by the statement). */
  message: MessageRow | null;
  /** With an origin: the conversation's open case (locked; it recorded who answered), or null. */
  openCaseId: string | null;
}

/** Where an origin's composed writes run (SendOrigin.composed): after the case's lock, when allowed. */
const COMPOSED_GATE = sql`(SELECT count(*) FROM answered_case) >= 0 AND EXISTS (SELECT 1 FROM send_allowed)`;

/** Every character String.prototype.trim removes: a variable value is blank when only these remain. */
const TRIMMED = Array.from({ length: 0x10000 }, (_, c) => String.fromCharCode(c))
  .filter((ch) => ch.trim() === '')
  .join('');

/**
 * The contact (locked, or created), its conversation (locked, or created) and the message
 * `pending`, in one statement: the lock order of docs/architecture.md ("Lock order")
 * holds inside it (the contact's row lock is taken before the conversation's is looked for; with
 * an `origin`, the open case is locked and records who answered before the message's insert). The
 * message is inserted only when the send is allowed: free text within 24 h of the contact's last
 * inbound message (api.md §3), a template to a contact who did not opt out (`send_opted_out`);
 * a send that would be refused creates no contact nor conversation, so a refusal leaves nothing
 * behind even outside a transaction. Template variables resolve in the statement as
 * resolveVariables does: the value sent, else the contact's attribute, else the example.
 */
async function storeSend(db: Executor, w: SendWrite, accountLocked = false, origin?: SendOrigin, compose = false): Promise<Written> {
  const { account, template, input, now } = w;
  const allowed = template ? sql`NOT c.opted_out` : sql`v.last_inbound_at > ${new Date(now.getTime() - WINDOW_MS)}::timestamptz`;
  const ctes = [
    // Free text never goes to a new contact: its conversation would have no inbound message.
    sendContactCtes(account.id, w.phone, now, template !== null && (!w.limited || accountLocked)),
    // Free text never opens a conversation: a new one has no inbound message, its window is closed.
    sendConversationCtes(account.id, w.number.id, now, template ? sql`NOT (SELECT opted_out FROM send_contact)` : sql`false`),
  ];
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
  const sentBy = sentByOf(origin, input.app);
  const source = origin?.source ?? (input.campaignId ? 'campaign' : 'api');
  // The origin's own writes in this statement: after the case's lock, before the message.
  const composed = compose && origin?.composed ? origin.composed(COMPOSED_GATE) : null;
  const composedRows = composed ? sql`EXISTS (SELECT 1 FROM ${sql.table(composed.rows)})` : undefined;
  // Who answered, on the open case: locked before the message is inserted (the insert reads it).
  const answer = origin
    ? recordAnswerCtes(sql`(SELECT id FROM send_conversation)`, answererOf(origin.source), now, agentOf(origin), composedRows)
    : null;
  if (answer && composed) {
    ctes.push(
      answer.lock,
      sql`send_allowed AS (SELECT 1 FROM send_contact c, send_conversation v WHERE ${allowed})`,
      composed.ctes,
      answer.update,
    );
  } else if (answer) ctes.push(answer.ctes);
  ctes.push(sql`
send_message AS (
  INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, direction, type, text, template_id,
    template_name, template_variables, to_phone, campaign_id, source, sent_by, status, created_at, updated_at)
  SELECT ${newId()}::uuid, ${account.id}::uuid, v.id, c.id, ${w.number.id}::uuid, 'outbound', ${template ? 'template' : 'text'}::text,
    ${template ? null : (input.text ?? null)}::text, ${template?.id ?? null}::uuid, ${template?.name ?? null}::text, ${variables},
    ${w.phone}::text, ${input.campaignId ?? null}::uuid, ${source}::text, ${sentBy}::jsonb, 'pending',
    ${now}::timestamptz, ${now}::timestamptz
  FROM send_contact c, send_conversation v
  WHERE ${allowed} ${composedRows ? sql`AND ${composedRows}` : answer ? sql`AND (SELECT count(*) FROM ${sql.table(answer.open)}) >= 0` : sql``}
  RETURNING *
)`);
  const { rows } = await sql<
    MessageRow & {
      s_contact_id: string | null;
      s_created: boolean | null;
      s_opted_out: boolean | null;
      s_conversation_id: string | null;
      s_last_inbound_at: Date | null;
      s_open_case_id?: string | null;
      s_allowed?: boolean;
    }
  >`
    WITH ${sql.join(ctes)}
    SELECT c.id AS s_contact_id, c.inserted AS s_created, c.opted_out AS s_opted_out,
      v.id AS s_conversation_id, v.last_inbound_at AS s_last_inbound_at,
      m.* ${answer ? sql`, (SELECT id FROM ${sql.table(answer.open)}) AS s_open_case_id` : sql``}
      ${composed ? sql`, EXISTS (SELECT 1 FROM send_allowed) AS s_allowed` : sql``}
    FROM (SELECT 1) one
      LEFT JOIN send_contact c ON true
      LEFT JOIN send_conversation v ON true
      LEFT JOIN send_message m ON true`.execute(db);
  const r = rows[0]!;
  const { s_contact_id, s_created, s_opted_out, s_conversation_id, s_last_inbound_at, s_open_case_id, s_allowed, ...message } = r;
  // Allowed, yet the origin's rows are missing (an automation's claim lost): no message was written.
  if (composed && s_allowed && !message.id) throw composed.lost();
  return {
    contactId: s_contact_id,
    created: s_created === true,
    optedOut: s_opted_out === true,
    conversationId: s_conversation_id,
    lastInboundAt: s_last_inbound_at,
    message: message.id ? message : null,
    openCaseId: s_open_case_id ?? null,
  };
}

/**
 * A send without an origin (the API, a campaign): one statement, no transaction. Only a new
 * contact under a contact limit takes a transaction: the account's lock and count
 * (assertContactRoom), then the same statement.
 */
export async function writeAlone(db: Db, w: SendWrite): Promise<{ message: MessageRow; created: boolean }> {
  let written = await retrying(() => storeSend(db, w));
  if (written.contactId === null && w.limited) {
    written = await transaction(db, async (trx) => {
      await assertContactRoom(trx, w.account);
      return storeSend(trx, w, true);
    });
  }
  const message = written.message ?? refusal(w, written);
  return { message, created: written.created };
}

/**
 * A send of an automation, an agent or the team: the contact, its conversation, who answered the
 * open case and the message in one statement (storeSend), with the origin's records
 * (`origin.composed`: an automation's step started) in it when the origin can — one round trip, no
 * transaction; else in one transaction, the origin's records after the statement
 * (`origin.inTransaction`). A refusal leaves nothing behind either way.
 */
export async function writeWithOrigin(db: Db, w: SendWrite, origin: SendOrigin): Promise<{ message: MessageRow; created: boolean }> {
  if (origin.composed) {
    const written = await retrying(() => storeSend(db, w, false, origin, true));
    if (written.message) return { message: written.message, created: written.created };
    // A new contact under a contact limit needs the account's lock first: the transaction below.
    if (!(written.contactId === null && w.limited)) refusal(w, written);
  }
  return transaction(db, async (trx) => {
    let written = await storeSend(trx, w, false, origin);
    if (written.contactId === null && w.limited) {
      await assertContactRoom(trx, w.account);
      written = await storeSend(trx, w, true, origin);
    }
    const message = written.message ?? refusal(w, written);
    if (origin.inTransaction) {
      await origin.inTransaction(trx, message.id, { conversationId: message.conversation_id, openCaseId: written.openCaseId, now: w.now });
    }
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
 * message, `pending`, with who wrote it (an Instagram send: send.ts). A send of an automation, an
 * agent or the team records who answered the open case first, and `origin.inTransaction` runs
 * after the insert (the team's takes the conversation over there: docs/architecture.md "Lock
 * order").
 */
export async function insertOutbound(
  trx: Trx,
  values: Omit<Insertable<MessagesTable>, 'id' | 'direction' | 'status' | 'created_at' | 'updated_at'>,
  origin: SendOrigin | undefined,
  now: Date,
): Promise<MessageRow> {
  const conversationId = values.conversation_id;
  const openCaseId = origin ? await recordAnswer(trx, conversationId, answererOf(origin.source), now, agentOf(origin)) : null;
  const message = await trx
    .insertInto('messages')
    .values({
      ...values,
      id: newId(),
      direction: 'outbound',
      status: 'pending',
      ...(origin?.by ? { sent_by: sentByOf(origin, undefined) } : {}),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (origin?.inTransaction) await origin.inTransaction(trx, message.id, { conversationId, openCaseId, now });
  return message;
}
