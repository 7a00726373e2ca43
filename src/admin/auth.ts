// Operator API auth: `Authorization: Bearer <ADMIN_TOKEN>` (operator.md).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../http/errors.js';
import { bearer } from '../keys/token-cache.js';
import type { Services } from '../services.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function adminAuth(app: FastifyInstance, services: Services): void {
  const expected = digest(services.adminToken);
  app.addHook('onRequest', async (req) => {
    const token = bearer(req.headers.authorization);
    if (!token || !timingSafeEqual(digest(token), expected)) throw new ApiError('admin_unauthorized');
  });
}
