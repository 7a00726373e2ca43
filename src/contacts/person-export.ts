// The export of one person on request (docs/privacy.md "Erasure and export of one person"):
// everything we hold about them as one JSON document — the contact and its attributes, consent,
// conversations with their messages and notes, cases, what flows saved and logged, what AI agents
// decided, campaigns that reached them, their comments. Streamed: the long parts (messages, step
// logs, agent turns) are read a page at a time while the client reads, never all in memory.
import { Readable } from 'node:stream';
import { type SelectQueryBuilder, sql } from 'kysely';
import { type AuditWho, audit } from '../audit/trail.js';
import { casesQuery, caseView } from '../cases/view.js';
import type { Executor } from '../db/index.js';
import type { Database } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import type { Services } from '../services.js';
import { contactView } from './service.js';

const PAGE = 500;

/** The document's pieces, each a JSON text: `"key":value` members and array elements. */
type Rows = AsyncGenerator<unknown>;

/** Rows of `q` (ordered by `id`) a page at a time. */
async function* paged<O extends { id: string }>(q: (after: string | null) => SelectQueryBuilder<Database, never, O>): Rows {
  let after: string | null = null;
  for (;;) {
    const rows: O[] = await q(after).limit(PAGE).execute();
    yield* rows;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1]?.id ?? null;
  }
}

/** Each row of `rows` as `f` makes it. */
async function* mapped<T>(rows: Rows, f: (row: T) => unknown): Rows {
  for await (const r of rows) yield f(r as T);
}

/** A stored row's columns spelled as the API spells fields (snake_case → camelCase). */
const camel = (row: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(row).map(([k, v]) => [k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), v]));

async function* array(rows: Rows): AsyncGenerator<string> {
  yield '[';
  let first = true;
  for await (const r of rows) {
    yield `${first ? '' : ','}${JSON.stringify(r)}`;
    first = false;
  }
  yield ']';
}

const after = <Q extends SelectQueryBuilder<Database, never, { id: string }>>(q: Q, id: string | null, col = 'id') =>
  (id ? q.where(sql.ref(col), '>', id) : q).orderBy(sql.ref(col)) as Q;

async function* document(db: Executor, accountId: string, contactId: string, at: Date): AsyncGenerator<string> {
  const contact = await db.selectFrom('contacts').selectAll().where('id', '=', contactId).executeTakeFirstOrThrow();
  const view = contactView(contact);
  yield `{"object":"contact_export","exportedAt":${JSON.stringify(at.toISOString())},"contact":${JSON.stringify(view)}`;
  yield `,"consent":${JSON.stringify({ optedOut: view.optedOut, marketingOptOut: view.marketingOptOut })}`;
  const conversations = await db
    .selectFrom('conversations')
    .select([
      'id',
      'channel',
      'phone_number_id as phoneNumberId',
      'social_account_id as socialAccountId',
      'created_at as createdAt',
      'last_inbound_at as lastInboundAt',
    ])
    .where('account_id', '=', accountId)
    .where('contact_id', '=', contactId)
    .orderBy('id')
    .execute();
  yield ',"conversations":[';
  for (const [i, c] of conversations.entries()) {
    yield `${i ? ',' : ''}${JSON.stringify(c).slice(0, -1)},"messages":`;
    yield* array(messagesOf(db, c.id));
    const notes = await db
      .selectFrom('conversation_notes')
      .select(['id', 'case_id as caseId', 'text', 'by', 'created_at as createdAt'])
      .where('conversation_id', '=', c.id)
      .orderBy('id')
      .execute();
    yield `,"notes":${JSON.stringify(notes)}}`;
  }
  yield ']';
  const ids = conversations.map((c) => c.id);
  yield ',"cases":';
  // As the API shows a case (GET /cases/{id}).
  yield* array(
    ids.length
      ? mapped(
          paged((a) => after(casesQuery(db).where('cases.conversation_id', 'in', ids), a, 'cases.id')),
          caseView,
        )
      : empty(),
  );
  yield ',"automationExecutions":';
  yield* array(executionsOf(db, contactId));
  yield ',"agentStretches":';
  yield* array(stretchesOf(db, contactId));
  yield ',"agentReviews":';
  yield* array(
    mapped(
      paged((a) => after(db.selectFrom('agent_reviews').selectAll().where('contact_id', '=', contactId), a)),
      camel,
    ),
  );
  yield ',"campaigns":';
  const recipients = await db
    .selectFrom('campaign_recipients as r')
    .innerJoin('campaigns as c', 'c.id', 'r.campaign_id')
    .select([
      'c.id as campaignId',
      'c.name as campaignName',
      'r.phone',
      'r.status',
      'r.message_id as messageId',
      'r.error',
      'r.updated_at as updatedAt',
    ])
    .where('r.contact_id', '=', contactId)
    .execute();
  yield JSON.stringify(recipients);
  yield ',"socialComments":';
  yield* array(
    mapped(
      paged((a) => after(db.selectFrom('social_comments').selectAll().where('contact_id', '=', contactId), a)),
      camel,
    ),
  );
  yield '}';
}

async function* empty(): Rows {}

function messagesOf(db: Executor, conversationId: string): Rows {
  return paged((a) =>
    after(
      db
        .selectFrom('messages')
        .select([
          'id',
          'direction',
          'type',
          'text',
          'template_name as templateName',
          'template_variables as templateVariables',
          'to_phone as toPhone',
          'status',
          'code',
          'error',
          'source',
          'sent_by as sentBy',
          'campaign_id as campaignId',
          'created_at as createdAt',
          'sent_at as sentAt',
          'delivered_at as deliveredAt',
          'read_at as readAt',
          'failed_at as failedAt',
        ])
        .where('conversation_id', '=', conversationId),
      a,
    ),
  );
}

/** Each execution with what it saved (variables) and its step log. */
async function* executionsOf(db: Executor, contactId: string): Rows {
  const rows = paged((a) =>
    after(
      db
        .selectFrom('automation_executions as e')
        .innerJoin('automations as au', 'au.id', 'e.automation_id')
        .select([
          'e.id',
          'e.automation_id as automationId',
          'au.name as automationName',
          'e.conversation_id as conversationId',
          'e.status',
          'e.error',
          'e.variables',
          'e.started_at as startedAt',
          'e.ended_at as endedAt',
        ])
        .where('e.contact_id', '=', contactId),
      a,
      'e.id',
    ),
  );
  for await (const e of rows as AsyncGenerator<{ id: string }>) {
    const steps = await db
      .selectFrom('automation_steps')
      .select(['step_id as stepId', 'type', 'outcome', 'detail', 'started_at as startedAt', 'ended_at as endedAt'])
      .where('execution_id', '=', e.id)
      .orderBy('id')
      .execute();
    yield { ...e, steps };
  }
}

/** Each agent stretch with its turns (what the model was asked to do and decided). */
async function* stretchesOf(db: Executor, contactId: string): Rows {
  const rows = paged((a) => after(db.selectFrom('agent_stretches').selectAll().where('contact_id', '=', contactId), a));
  for await (const st of rows as AsyncGenerator<{ id: string }>) {
    const turns = await db
      .selectFrom('agent_turns')
      .select(['n', 'status', 'tool_calls as toolCalls', 'outcome', 'error', 'started_at as startedAt', 'ended_at as endedAt'])
      .where('stretch_id', '=', st.id)
      .orderBy('n')
      .execute();
    yield { ...camel(st), turns };
  }
}

/**
 * GET …/contacts/{contactId}/export: 404 unless a live contact of the account; the audit line is
 * committed before the first byte leaves (no export without its line), then the document streams.
 */
export async function exportPerson(s: Services, accountId: string, contactId: string, who: AuditWho): Promise<Readable> {
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    const found = await trx
      .selectFrom('contacts')
      .select('id')
      .where('account_id', '=', accountId)
      .where('id', '=', contactId)
      .where('erased_at', 'is', null)
      .executeTakeFirst();
    if (!found) throw new ApiError('contact_not_found');
    await audit(trx, now, who, { accountId, action: 'contact.exported', target: { type: 'contact', id: contactId } });
  });
  return Readable.from(document(s.db, accountId, contactId, now));
}
