// Operator API for the team inbox (the console's Conversaciones, docs/operator.md "Inbox"): the
// conversations by latest activity with their contact and last message, one conversation, its
// latest messages, a note from the team and the hand-back that ends the team's handling.
import { sql } from 'kysely';
import { z } from 'zod';
import { memberBy } from '../admin/auth.js';
import { invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { errors, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import type { Services } from '../services.js';
import { addNote, clearHandling, getConversation, getConversationRow, lockConversations, viewQuery } from './service.js';
import { ConversationMessage, ConversationView, conversationMessageView, conversationView } from './view.js';

const PREVIEW = 160;

const InboxContact = z.object({ id: Uuid, name: z.string(), phone: z.string().nullable(), username: z.string().nullable() });
const InboxItem = ConversationView.extend({
  contact: InboxContact,
  lastMessage: z
    .object({
      id: Uuid,
      direction: z.enum(['outbound', 'inbound']),
      type: z.string(),
      text: z.string().nullable().describe(`The first ${PREVIEW} characters (templates: their name)`),
      status: z.string(),
      createdAt: Timestamp,
    })
    .nullable(),
}).describe('InboxConversation');

const InboxQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50).describe('How many, 1 to 100') });
const Params = z.object({ id: Uuid, cid: Uuid });
const NoteBody = z.strictObject({
  text: z.string().min(1).max(4000),
  by: z.strictObject({ id: z.string().min(1).max(200).optional(), name: z.string().min(1).max(200) }).optional(),
});

async function inbox(s: Services, accountId: string, limit: number) {
  const rows = await viewQuery(s.db, accountId)
    .select((eb) =>
      eb
        .selectFrom('messages as m')
        .select('m.id')
        .whereRef('m.conversation_id', '=', 'c.id')
        .orderBy('m.id', 'desc')
        .limit(1)
        .as('last_id'),
    )
    .orderBy(sql`last_id desc nulls last`)
    .orderBy('c.id', 'desc')
    .limit(limit)
    .execute();
  const lastIds = rows.map((r) => r.last_id).filter((id): id is string => !!id);
  const contactIds = [...new Set(rows.map((r) => r.contact_id))];
  const [messages, contacts] = await Promise.all([
    lastIds.length ? s.db.selectFrom('messages').selectAll().where('id', 'in', lastIds).execute() : [],
    contactIds.length ? s.db.selectFrom('contacts').selectAll().where('id', 'in', contactIds).execute() : [],
  ]);
  const byId = new Map(messages.map((m) => [m.id, m]));
  const contactById = new Map(contacts.map((c) => [c.id, c]));
  return {
    data: rows.map((r) => {
      const c = contactById.get(r.contact_id);
      const m = r.last_id ? byId.get(r.last_id) : undefined;
      const text = m ? (m.type === 'template' && m.direction === 'outbound' ? m.template_name : m.text) : null;
      return {
        ...conversationView(r),
        contact: { id: r.contact_id, name: c?.name ?? '', phone: c?.phone ?? null, username: c?.socialchat_username ?? null },
        lastMessage: m
          ? {
              id: m.id,
              direction: m.direction,
              type: m.type,
              text: text === null ? null : text.slice(0, PREVIEW),
              status: m.status,
              createdAt: m.created_at.toISOString(),
            }
          : null,
      };
    }),
  };
}

/** The latest `limit` messages of the conversation, oldest first. */
async function latestMessages(s: Services, accountId: string, id: string, limit: number) {
  await getConversationRow(s.db, accountId, id);
  const rows = await s.db
    .selectFrom('messages')
    .selectAll()
    .where('conversation_id', '=', id)
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return { data: rows.reverse().map(conversationMessageView) };
}

export const inboxAdminRoutes: RoutesFn = (app, s) => {
  app.get(
    '/accounts/:id/conversations',
    {
      schema: {
        summary: 'The team inbox: conversations by latest message first, with contact and last message',
        tags: ['Operator'],
        params: z.object({ id: Uuid }),
        querystring: InboxQuery,
        response: { 200: z.object({ data: z.array(InboxItem) }), ...errors(400, 401, 404) },
      },
    },
    async (req) => inbox(s, req.params.id, req.query.limit),
  );

  app.get(
    '/accounts/:id/conversations/:cid',
    {
      schema: {
        summary: 'One conversation, with its contact',
        tags: ['Operator'],
        params: Params,
        response: { 200: ConversationView.extend({ contact: InboxContact }), ...errors(401, 404) },
      },
    },
    async (req) => {
      const view = await getConversation(s.db, req.params.id, req.params.cid);
      const c = await s.db.selectFrom('contacts').selectAll().where('id', '=', view.contactId).executeTakeFirstOrThrow();
      return { ...view, contact: { id: c.id, name: c.name, phone: c.phone, username: c.socialchat_username } };
    },
  );

  app.get(
    '/accounts/:id/conversations/:cid/messages',
    {
      schema: {
        summary: "The conversation's latest messages (both directions), oldest first",
        tags: ['Operator'],
        params: Params,
        querystring: InboxQuery,
        response: { 200: z.object({ data: z.array(ConversationMessage) }), ...errors(400, 401, 404) },
      },
    },
    async (req) => latestMessages(s, req.params.id, req.params.cid, req.query.limit),
  );

  app.post(
    '/accounts/:id/conversations/:cid/notes',
    {
      schema: {
        summary: 'A team member writes an internal note (never sent to the contact)',
        tags: ['Operator'],
        params: Params,
        body: NoteBody,
        response: {
          201: z.object({ id: Uuid, text: z.string(), caseId: Uuid.nullable(), createdAt: Timestamp }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req, reply) => {
      const by = memberBy(req) ?? req.body.by;
      if (!by) throw invalid(['by'], textFor('team_reply_by_required'));
      if (req.body.text.trim() === '') throw invalid(['text'], textFor('note_blank'));
      const view = await getConversation(s.db, req.params.id, req.params.cid);
      const note = await addNote(
        s.db,
        {
          accountId: req.params.id,
          conversationId: view.id,
          caseId: view.openCaseId,
          text: req.body.text,
          by: { type: 'team', id: by.id ?? null, name: by.name },
        },
        s.clock.now(),
      );
      return reply.code(201).send({ id: note.id, text: note.text, caseId: note.case_id, createdAt: note.created_at.toISOString() });
    },
  );

  app.post(
    '/accounts/:id/conversations/:cid/handback',
    {
      schema: {
        summary: 'Hand the conversation back to the bot: the team stops handling it',
        description:
          'Clears a team handling (no effect on an automation or AI agent handling it). The next inbound starts automations and agents again.',
        tags: ['Operator'],
        params: Params,
        response: { 200: ConversationView, ...errors(401, 404) },
      },
    },
    async (req) => {
      await getConversationRow(s.db, req.params.id, req.params.cid);
      await s.db.transaction().execute(async (trx) => {
        await lockConversations(trx, [req.params.cid]);
        await clearHandling(trx, req.params.cid, 'team');
      });
      return getConversation(s.db, req.params.id, req.params.cid);
    },
  );
};
