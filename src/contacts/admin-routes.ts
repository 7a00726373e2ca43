// Operator API (and the console, with a session): the account's contacts — search, one contact
// with its conversations, edit, erase or export one person — and CSV import and export
// (docs/operator.md "Contacts"). The
// same services and schemas as /api/v1/contacts: no second copy of a rule.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { ApiError } from '../http/errors.js';
import { CursorQuery, errors, NoBody, type RoutesFn, Timestamp, Uuid, type ZodApp } from '../http/schemas.js';
import { eraseContact } from './erasure.js';
import { exportContacts } from './export.js';
import { getImport, importFailures, previewImport, readCsvBody, startImport } from './import.js';
import { exportPerson } from './person-export.js';
import { Attributes, ContactPage, ContactView, PersonExport } from './schemas.js';
import { contactView, editContact, getContact, listContacts } from './service.js';

const AccountParams = z.object({ id: Uuid });
const ContactParams = z.object({ id: Uuid, contactId: Uuid });
const ImportParams = z.object({ id: Uuid, importId: Uuid });

const SearchQuery = CursorQuery.extend({
  q: z.string().max(200).optional().describe('Text in the name (any case) or digits of the phone'),
});

const ContactEdit = z.strictObject({
  name: z.string().max(120).optional().describe('Replaced when sent'),
  attributes: Attributes.optional().describe('Merged (JSON Merge Patch): only the sent keys change, null removes a key'),
});

const ContactWithConversations = ContactView.extend({
  conversations: z
    .array(z.object({ id: Uuid, channel: z.string(), lastInboundAt: Timestamp.nullable(), createdAt: Timestamp }))
    .describe('The contact’s conversations, newest first'),
});

const Problem = z.object({
  column: z.string().describe('phone, name, an attribute key, or empty for the whole row'),
  value: z.string().describe('The value that failed'),
  reason: z.string().describe('Why, in Spanish'),
});
const Failure = z.object({ row: z.number().int().describe('The row in the file (the header is row 1)'), problems: z.array(Problem) });
const ImportView = z
  .object({
    id: Uuid,
    object: z.literal('contact_import'),
    state: z.enum(['previewed', 'queued', 'running', 'done', 'failed']),
    columns: z.array(z.string()),
    totalRows: z.number().int(),
    validRows: z.number().int().describe('Rows that passed the preview’s checks'),
    processedRows: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    failed: z.number().int(),
    preview: z.array(
      z.object({ row: z.number().int(), phone: z.string(), name: z.string(), attributes: z.record(z.string(), z.string()) }),
    ),
    failures: z.array(Failure).describe('The first 100 failing rows; every one through GET …/failures'),
    hasMoreFailures: z.boolean(),
    error: z.string().nullable().describe('Why a failed import stopped'),
    createdAt: Timestamp,
    startedAt: Timestamp.nullable(),
    finishedAt: Timestamp.nullable(),
  })
  .describe('A contact CSV import (docs/operator.md "Contact imports")');
const FailuresQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  after: z.coerce.number().int().min(0).optional().describe('The last row number of the previous page'),
});

/** POST …/contacts/imports in a scope of its own: its body is text/csv; any other type → 415 saying so. */
function importUpload(app: FastifyInstance, s: Parameters<RoutesFn>[1]): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'text/csv',
    async (req: { headers: Record<string, string | string[] | undefined> }, payload: AsyncIterable<Buffer>) => {
      const charset = /charset=([^;\s]+)/i.exec(String(req.headers['content-type']))?.[1]?.toLowerCase();
      if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new ApiError('contact_import_content_type');
      return readCsvBody(payload, req.headers['content-length'] as string | undefined);
    },
  );
  app.addContentTypeParser('*', async () => {
    throw new ApiError('contact_import_content_type');
  });
  (app as unknown as ZodApp).post(
    '/accounts/:id/contacts/imports',
    {
      schema: {
        summary: 'Upload a contact CSV: every row checked, nothing written yet (state previewed)',
        description:
          'Body: the file as text/csv in UTF-8, at most 20 MiB. Columns: phone, name, then one per attribute (keys as in POST /api/v1/contacts). ' +
          'Answers the first rows and every row that would fail, with the value and why (phone, attribute limits, the plan’s contact limit). ' +
          'POST …/imports/{importId}/start imports it in the background. Imported contacts emit no contact.created.',
        tags: ['Operator'],
        params: AccountParams,
        response: { 201: ImportView, ...errors(400, 401, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      if (!Buffer.isBuffer(req.body)) throw new ApiError('contact_import_content_type');
      return reply.code(201).send(await previewImport(s, req.account, req.body));
    },
  );
}

export const contactAdminRoutes: RoutesFn = (app, s) => {
  app.get(
    '/accounts/:id/contacts',
    {
      schema: {
        summary: 'Search the account’s contacts by name or phone, oldest first, by cursor',
        tags: ['Operator'],
        params: AccountParams,
        querystring: SearchQuery,
        response: { 200: ContactPage, ...errors(400, 401, 404) },
      },
    },
    async (req) => listContacts(s.db, req.params.id, req.query),
  );

  app.get(
    '/accounts/:id/contacts/:contactId',
    {
      schema: {
        summary: 'One contact with its conversations',
        tags: ['Operator'],
        params: ContactParams,
        response: { 200: ContactWithConversations, ...errors(401, 404) },
      },
    },
    async (req) => {
      const contact = contactView(await getContact(s.db, req.params.id, req.params.contactId));
      const conversations = await s.db
        .selectFrom('conversations')
        .select(['id', 'channel', 'last_inbound_at', 'created_at'])
        .where('account_id', '=', req.params.id)
        .where('contact_id', '=', req.params.contactId)
        .orderBy('id', 'desc')
        .limit(100)
        .execute();
      return {
        ...contact,
        conversations: conversations.map((c) => ({
          id: c.id,
          channel: c.channel,
          lastInboundAt: c.last_inbound_at ? c.last_inbound_at.toISOString() : null,
          createdAt: c.created_at.toISOString(),
        })),
      };
    },
  );

  app.patch(
    '/accounts/:id/contacts/:contactId',
    {
      schema: {
        summary: 'Change a contact’s name or attributes (the limits of POST /api/v1/contacts)',
        tags: ['Operator'],
        params: ContactParams,
        body: ContactEdit,
        response: { 200: ContactView, ...errors(400, 401, 404, 409) },
      },
    },
    async (req) => editContact(s, req.params.id, req.params.contactId, req.body),
  );

  app.register(async (scope) => importUpload(scope, s));

  app.post(
    '/accounts/:id/contacts/imports/:importId/start',
    {
      schema: {
        summary: 'Start a previewed import: it runs in the background (state queued, then running, then done)',
        tags: ['Operator'],
        params: ImportParams,
        body: NoBody,
        response: { 202: ImportView, ...errors(401, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await startImport(s, req.params.id, req.params.importId)),
  );

  app.get(
    '/accounts/:id/contacts/imports/:importId',
    {
      schema: {
        summary: 'An import: state, progress, preview and its first failing rows',
        tags: ['Operator'],
        params: ImportParams,
        response: { 200: ImportView, ...errors(401, 404) },
      },
    },
    async (req) => getImport(s.db, req.params.id, req.params.importId),
  );

  app.get(
    '/accounts/:id/contacts/imports/:importId/failures',
    {
      schema: {
        summary: 'Every failing row of an import, by row number',
        tags: ['Operator'],
        params: ImportParams,
        querystring: FailuresQuery,
        response: {
          200: z.object({ data: z.array(Failure), hasMore: z.boolean(), nextCursor: z.number().int().nullable() }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => importFailures(s.db, req.params.id, req.params.importId, req.query),
  );

  app.get(
    '/accounts/:id/contacts/export',
    {
      schema: {
        summary: 'Every contact as CSV (phone, name, one column per attribute field), streamed',
        tags: ['Operator'],
        params: AccountParams,
        produces: ['text/csv'],
      },
    },
    async (req, reply) => {
      const stream = await exportContacts(s.db, req.params.id);
      const day = s.clock.now().toISOString().slice(0, 10);
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="contactos-${day}.csv"`)
        .header('cache-control', 'no-store')
        .send(stream);
    },
  );

  app.delete(
    '/accounts/:id/contacts/:contactId',
    {
      schema: {
        summary: 'Erase one person: their contact, the text of their messages, notes, flow variables, agent transcripts and copies',
        description:
          'The right to erasure (docs/privacy.md "Erasure and export of one person"). Running executions and agent stretches of their ' +
          'conversations stop; messages, cases and campaign recipients stay with ids, times and statuses only (counts still add up); ' +
          'queued webhook deliveries of events about them are skipped and the events scrubbed. A later message from the same phone ' +
          'makes a new contact. Written to the audit trail (contact.erased). An erased or unknown contact → 404.',
        tags: ['Operator'],
        params: ContactParams,
        response: { 204: z.null().describe('Erased'), ...errors(401, 404) },
      },
    },
    async (req, reply) => {
      await eraseContact(s, req.params.id, req.params.contactId, whoOf(req));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/accounts/:id/contacts/:contactId/export',
    {
      schema: {
        summary: 'Everything held about one person, as one JSON document (streamed)',
        description:
          'The right of access (docs/privacy.md "Erasure and export of one person"): contact, attributes, consent, conversations with ' +
          'messages and notes, cases, flow executions with their variables and step logs, agent stretches with their turns, agent ' +
          'reviews, campaigns that reached them, social comments. Written to the audit trail (contact.exported) before it is sent.',
        tags: ['Operator'],
        params: ContactParams,
        produces: ['application/json'],
        response: { 200: PersonExport, ...errors(401, 404) },
      },
    },
    async (req, reply) => {
      const stream = await exportPerson(s, req.params.id, req.params.contactId, whoOf(req));
      return (
        reply
          .header('content-type', 'application/json; charset=utf-8')
          .header('content-disposition', `attachment; filename="contacto-${req.params.contactId}.json"`)
          .header('cache-control', 'no-store')
          // The schema documents the document; Fastify sends a stream as it is, never serialised.
          .send(stream as unknown as z.infer<typeof PersonExport>)
      );
    },
  );
};
