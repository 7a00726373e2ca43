// POST /contacts, GET /contacts, GET /contacts/{id} (api.md §4; decisions.md "Endpoints").
import { CursorQuery, errors, IdParams, type RoutesFn } from '../http/schemas.js';
import { ContactInput, ContactPage, ContactView } from './schemas.js';
import { contactView, getContact, listContacts, saveContactFromApi } from './service.js';

export const contactRoutes: RoutesFn = (app, s) => {
  app.post(
    '/contacts',
    {
      config: { idempotent: true },
      schema: {
        summary: 'Create or update a contact by phone',
        description:
          'A new phone creates the contact (201, webhook `contact.created` with source `api`); a known one updates it (200). ' +
          'Attributes are merged: only the sent keys change. Spellings of one number (e.g. Argentine mobiles with or without 9) are one contact. ' +
          'An optional `Idempotency-Key` header (1–255 characters) replays the first answer for 24 hours.',
        tags: ['Contacts'],
        body: ContactInput,
        response: { 200: ContactView, 201: ContactView, ...errors(400, 401, 402, 409, 422, 429) },
      },
    },
    async (req, reply) => {
      const { contact, created } = await saveContactFromApi(s, req.auth.account, req.body);
      return reply.code(created ? 201 : 200).send(contact);
    },
  );

  app.get(
    '/contacts',
    {
      schema: {
        summary: 'The contacts of the account, oldest first, by cursor',
        tags: ['Contacts'],
        querystring: CursorQuery,
        response: { 200: ContactPage, ...errors(400, 401, 402, 429) },
      },
    },
    async (req) => listContacts(s.db, req.auth.account.id, req.query),
  );

  app.get(
    '/contacts/:id',
    {
      schema: {
        summary: 'One contact',
        tags: ['Contacts'],
        params: IdParams,
        response: { 200: ContactView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => contactView(await getContact(s.db, req.auth.account.id, req.params.id)),
  );
};
