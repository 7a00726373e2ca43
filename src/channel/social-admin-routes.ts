// Operator API: social accounts (docs/operator.md "Social accounts"); the rules live in
// social-accounts.ts.
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { IdParams, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { createSocialAccount, deleteSocialAccount, listSocialAccounts, updateSocialAccount } from './social-accounts.js';

const secret = z.string().trim().min(1).max(1000);

const InstagramInput = z
  .strictObject({
    igUserId: z.string().trim().min(1).max(100).describe('Our Instagram account id (the webhooks name it in entry[].id and recipient.id)'),
    accessToken: secret.describe('Instagram access token (never returned)'),
    appSecret: secret.describe('App secret that signs the webhooks (never returned)'),
    verifyToken: secret.describe('Token of the webhook verification handshake (never returned)'),
  })
  .describe('Instagram (Instagram API with Instagram Login) ids and secrets');

const Name = z.string().trim().min(1).max(200);

const CreateInput = z.strictObject({
  name: Name,
  provider: z.enum(['sandbox', 'instagram']).describe('sandbox: messages come from POST /admin/v1/sandbox/social-inbound'),
  instagram: InstagramInput.optional().describe('Required with provider instagram'),
});

/** New secrets of a connected Instagram account (a renewed token); the account id does not change. */
const InstagramSecrets = z
  .strictObject({
    accessToken: secret.optional().describe('A new Instagram access token (never returned)'),
    appSecret: secret.optional().describe('A new app secret (never returned)'),
    verifyToken: secret.optional().describe('A new webhook verify token (never returned)'),
  })
  .describe('Instagram secrets to replace (a renewed token); only on an instagram social account');

const PatchInput = z.strictObject({
  name: Name.optional(),
  instagram: InstagramSecrets.optional(),
  status: z.enum(['connected', 'disconnected']).optional(),
  agentId: Uuid.nullable()
    .optional()
    .describe(
      'The AI agent that answers the conversations on this social account that no automation, running agent or team member handles: an agent of the account, not deleted (a paused one answers once active); null: none',
    ),
});

const SocialAccountView = z
  .object({
    id: Uuid,
    name: z.string(),
    provider: z.enum(['sandbox', 'instagram']),
    status: z.enum(['connected', 'disconnected']),
    igUserId: z.string().nullable().describe('instagram: our Instagram account id'),
    agentId: Uuid.nullable().describe('The AI agent that answers its conversations (null: none)'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('A social account (secrets are never returned)');

const SocialParams = z.object({ id: Uuid, socialId: Uuid });

export const socialAccountAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/social-accounts',
    {
      schema: {
        summary: 'Connect a social account (Instagram Direct, or the sandbox)',
        tags: ['Operator'],
        params: IdParams,
        body: CreateInput,
        response: { 201: SocialAccountView },
      },
    },
    async (req, reply) => {
      const { account } = req;
      const row = await createSocialAccount(s, account.id, req.body, whoOf(req));
      req.log.info({ accountId: account.id, socialAccountId: row.id, provider: row.provider }, 'social account connected');
      return reply.code(201).send(row);
    },
  );

  app.get(
    '/accounts/:id/social-accounts',
    {
      schema: {
        summary: "The account's social accounts",
        tags: ['Operator'],
        params: IdParams,
        response: { 200: z.object({ data: z.array(SocialAccountView) }) },
      },
    },
    async (req) => {
      return { data: await listSocialAccounts(s.db, req.params.id) };
    },
  );

  app.patch(
    '/accounts/:id/social-accounts/:socialId',
    {
      schema: {
        summary: 'Rename a social account, connect or disconnect it, or assign its AI agent',
        tags: ['Operator'],
        params: SocialParams,
        body: PatchInput,
        response: { 200: SocialAccountView },
      },
    },
    async (req) => {
      const { account } = req;
      return updateSocialAccount(s, account.id, req.params.socialId, req.body, whoOf(req));
    },
  );

  app.delete(
    '/accounts/:id/social-accounts/:socialId',
    {
      schema: {
        summary: 'Delete a social account (its conversations and messages stay)',
        tags: ['Operator'],
        params: SocialParams,
      },
    },
    async (req, reply) => {
      const { account } = req;
      await deleteSocialAccount(s, account.id, req.params.socialId, whoOf(req));
      req.log.info({ accountId: account.id, socialAccountId: req.params.socialId }, 'social account deleted');
      return reply.code(204).send();
    },
  );
};
