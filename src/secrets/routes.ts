// Operator API: rotating the secrets key (docs/operator.md "Secrets"). The server holds the
// keyring (and PGlite allows one process), so the CLI's `chasqui secrets rotate` asks it.
import { z } from 'zod';
import { audit, whoOf } from '../audit/trail.js';
import { errors, NoBody, type RoutesFn } from '../http/schemas.js';
import { resealAll } from './reseal.js';

const Rotated = z.object({
  resealed: z.number().int().describe('Values sealed again with the first key of SECRETS_KEYS').meta({ example: 12 }),
  keyId: z.string().describe('The id of the key that seals now (the first of SECRETS_KEYS)').meta({ example: 'k2' }),
  missingKeyIds: z
    .array(z.string())
    .describe('Ids of keys not in SECRETS_KEYS that sealed values left as they are: keep them until those values are written again')
    .meta({ example: [] }),
});

export const secretAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/secrets/rotate',
    {
      schema: {
        summary: 'Re-seal every stored credential with the first key of SECRETS_KEYS',
        description:
          'In batches; afterwards no value needs another key of the ring, so an old key can leave SECRETS_KEYS. Idempotent. Written to the audit trail (secrets.rotated).',
        tags: ['Operator: secrets'],
        body: NoBody,
        response: { 200: Rotated, ...errors(401) },
      },
    },
    async (req) => {
      const r = await resealAll(s.db, s.secrets, 'rotate', s.log);
      await audit(s.db, s.clock.now(), whoOf(req), {
        accountId: null,
        action: 'secrets.rotated',
        target: { type: 'secrets_key', id: s.secrets.sealingKeyId },
        changes: { resealed: r.resealed, keyId: s.secrets.sealingKeyId, missingKeyIds: r.missingKeyIds },
      });
      s.log.info({ resealed: r.resealed, keyId: s.secrets.sealingKeyId }, 'secrets: rotated');
      return { resealed: r.resealed, keyId: s.secrets.sealingKeyId, missingKeyIds: r.missingKeyIds };
    },
  );
};
