// Operator API: accounts and keys (operator.md, "Accounts and keys").
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { createKey, listKeys, revokeKey } from '../keys/service.js';
import { PLAN_IDS } from '../limits/plans.js';
import { LimitsOverride } from './schemas.js';
import { accountBase, accountView, createAccount, listAccounts, updateAccount } from './service.js';

const AccountInput = z.strictObject({
  name: z.string().trim().min(1).max(200),
  plan: z.enum(PLAN_IDS),
  limits: LimitsOverride.optional(),
});

export const accountAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts',
    { schema: { summary: 'Create an account {name, plan, limits?}', tags: ['Operator'], body: AccountInput } },
    async (req, reply) => {
      const row = await createAccount(s.db, req.body, s.clock.now());
      return reply.code(201).send(accountBase(row));
    },
  );

  app.get('/accounts', { schema: { summary: 'List the accounts', tags: ['Operator'] } }, async () => {
    return { data: (await listAccounts(s.db)).map(accountBase) };
  });

  app.get(
    '/accounts/:id',
    { schema: { summary: 'An account with limits, usage and phone numbers (as GET /me)', tags: ['Operator'], params: IdParams } },
    async (req) => accountView(s.db, s.usage, req.account),
  );

  app.patch(
    '/accounts/:id',
    {
      schema: {
        summary: 'Change name, plan or limit overrides',
        description: '`limits` merges into the current overrides: only the keys sent change.',
        tags: ['Operator'],
        params: IdParams,
        body: AccountInput.partial(),
      },
    },
    async (req) => {
      return accountView(s.db, s.usage, await updateAccount(s, req.params.id, req.body, whoOf(req)));
    },
  );

  app.post(
    '/accounts/:id/keys',
    {
      schema: {
        summary: 'Create an API key (the key is returned only here)',
        description: "Only a hash is stored: keep the key now. The plan's maximum of keys applies (402).",
        tags: ['Operator'],
        params: IdParams,
        body: z.strictObject({ name: z.string().trim().min(1).max(200) }),
      },
    },
    async (req, reply) => {
      const { account } = req;
      return reply.code(201).send(await createKey(s.db, account, req.body.name, s.clock.now(), whoOf(req)));
    },
  );

  app.get(
    '/accounts/:id/keys',
    { schema: { summary: 'List the API keys (no secrets)', tags: ['Operator'], params: IdParams } },
    async (req) => {
      return { data: await listKeys(s.db, req.params.id) };
    },
  );

  app.delete(
    '/accounts/:id/keys/:keyId',
    { schema: { summary: 'Revoke an API key (401 from then on)', tags: ['Operator'], params: z.object({ id: Uuid, keyId: Uuid }) } },
    async (req, reply) => {
      await revokeKey(s, req.params.id, req.params.keyId, whoOf(req));
      return reply.code(204).send();
    },
  );
};
