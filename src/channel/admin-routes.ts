// Operator API: channel numbers (operator-api.md, "Channel numbers and templates").
// The first number of an account is its default; setting another as default unsets the previous
// one (GET /me `phoneNumbers` shows it). Cloud API ids and secrets live in the cloud_* columns and
// are never returned (phoneNumberView has no such field) nor logged.
import { sql } from 'kysely';
import { z } from 'zod';
import { PhoneNumberView } from '../accounts/schemas.js';
import { getAccount, phoneNumberView, readPhoneNumbers } from '../accounts/service.js';
import type { PhoneNumberRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';

const secret = z.string().trim().min(1).max(1000);

const CloudInput = z
  .strictObject({
    phoneNumberId: z.string().trim().min(1).max(100).describe('Graph id of the number (metadata.phone_number_id)'),
    wabaId: z.string().trim().min(1).max(100).describe('WhatsApp Business Account id'),
    accessToken: secret.describe('Graph access token (never returned)'),
    appSecret: secret.describe('App secret that signs the webhooks (never returned)'),
    verifyToken: secret.describe('Token of the webhook verification handshake'),
  })
  .describe('WhatsApp Cloud API ids and secrets');

const CreateInput = z.strictObject({
  phone: z.string().describe('International format with country code').meta({ example: '+54 9 11 5555-0000' }),
  name: z.string().trim().max(200).optional(),
  provider: z.enum(['sandbox', 'cloud']).optional().describe('Default: CHANNEL_PROVIDER'),
  cloud: CloudInput.optional(),
});

const PatchInput = z.strictObject({
  status: z.enum(['connected', 'disconnected']).optional(),
  default: z.boolean().optional().describe('true makes it the default number (the previous default stops being it)'),
});

const NumberParams = z.object({ id: Uuid, pnId: Uuid });

export const phoneNumberAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/phone-numbers',
    {
      schema: {
        summary: 'Connect a channel number (the first one is the default)',
        tags: ['Operator'],
        params: IdParams,
        body: CreateInput,
        response: { 201: PhoneNumberView },
      },
    },
    async (req, reply) => {
      const account = await getAccount(s.db, req.params.id);
      const phone = canonicalPhone(req.body.phone);
      if (!phone.ok) throw invalid(['phone'], phone.message);
      const provider = req.body.provider ?? s.config.CHANNEL_PROVIDER;
      const cloud = req.body.cloud;
      if (provider === 'cloud' && !cloud) {
        throw invalid(['cloud'], textFor('phone_number_cloud_required'));
      }
      const now = s.clock.now();
      const row = await s.db.transaction().execute(async (trx) => {
        // One creation at a time per account, so two first numbers cannot both become the default.
        await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
        if (cloud) {
          const taken = await trx
            .selectFrom('phone_numbers')
            .select('id')
            .where('cloud_phone_number_id', '=', cloud.phoneNumberId)
            .executeTakeFirst();
          if (taken) throw invalid(['cloud', 'phoneNumberId'], textFor('phone_number_cloud_taken'));
        }
        const current = await trx
          .selectFrom('phone_numbers')
          .select('id')
          .where('account_id', '=', account.id)
          .where('is_default', '=', true)
          .executeTakeFirst();
        return trx
          .insertInto('phone_numbers')
          .values({
            id: newId(),
            account_id: account.id,
            phone: phone.phone,
            name: req.body.name ?? null,
            provider,
            status: 'connected',
            is_default: !current,
            cloud_phone_number_id: provider === 'cloud' ? (cloud?.phoneNumberId ?? null) : null,
            cloud_waba_id: provider === 'cloud' ? (cloud?.wabaId ?? null) : null,
            cloud_access_token: provider === 'cloud' ? (cloud?.accessToken ?? null) : null,
            cloud_app_secret: provider === 'cloud' ? (cloud?.appSecret ?? null) : null,
            cloud_verify_token: provider === 'cloud' ? (cloud?.verifyToken ?? null) : null,
            created_at: now,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      });
      req.log.info({ accountId: account.id, phoneNumberId: row.id, provider }, 'phone number connected');
      s.accountViews.changed(account.id);
      return reply.code(201).send(phoneNumberView(row));
    },
  );

  app.get(
    '/accounts/:id/phone-numbers',
    { schema: { summary: "The account's channel numbers", tags: ['Operator'], params: IdParams } },
    async (req) => {
      await getAccount(s.db, req.params.id);
      return { data: await readPhoneNumbers(s.db, req.params.id) };
    },
  );

  app.patch(
    '/accounts/:id/phone-numbers/:pnId',
    {
      schema: {
        summary: 'Connect or disconnect a number, or make it the default',
        tags: ['Operator'],
        params: NumberParams,
        body: PatchInput,
        response: { 200: PhoneNumberView },
      },
    },
    async (req) => {
      const account = await getAccount(s.db, req.params.id);
      const { status, default: makeDefault } = req.body;
      const row = await s.db.transaction().execute(async (trx): Promise<PhoneNumberRow> => {
        await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
        const cur = await trx
          .selectFrom('phone_numbers')
          .selectAll()
          .where('account_id', '=', account.id)
          .where('id', '=', req.params.pnId)
          .executeTakeFirst();
        if (!cur) throw new ApiError('phone_number_not_found');
        // An account with numbers always has one default ("the first one is the default"): the
        // default changes by making another number the default, never by unsetting it.
        if (makeDefault === false && cur.is_default) throw invalid(['default'], textFor('phone_number_keep_default'));
        if (makeDefault === true && !cur.is_default) {
          await trx
            .updateTable('phone_numbers')
            .set({ is_default: false })
            .where('account_id', '=', account.id)
            .where('is_default', '=', true)
            .execute();
        }
        if (status === undefined && makeDefault === undefined) return cur;
        return trx
          .updateTable('phone_numbers')
          .set({ ...(status !== undefined ? { status } : {}), ...(makeDefault !== undefined ? { is_default: makeDefault } : {}) })
          .where('id', '=', cur.id)
          .returningAll()
          .executeTakeFirstOrThrow();
      });
      s.accountViews.changed(account.id);
      return phoneNumberView(row);
    },
  );
};
