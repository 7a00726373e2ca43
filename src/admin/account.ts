// The account of every operator route under /accounts/:id, loaded once by one preHandler before
// the handler (after validation, so a malformed id is still a 400): an unknown account answers
// 404 account_not_found, and the handler reads the row as req.account.
import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify';
import { getAccount } from '../accounts/service.js';
import type { AccountRow } from '../db/types.js';
import type { Services } from '../services.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every /admin/v1/accounts/:id… route (admin/account.ts). */
    account: AccountRow;
  }
}

/** A route path of the operator scope (without /admin/v1) that names an account. */
const ACCOUNT_ROUTE = /^\/accounts\/:id(\/|$)/;

export function loadAccountOfAdminRoutes(app: FastifyInstance, services: Services): void {
  app.decorateRequest('account', null as unknown as AccountRow);
  const load: preHandlerAsyncHookHandler = async (req) => {
    req.account = await getAccount(services.db, (req.params as { id: string }).id);
  };
  app.addHook('onRoute', (route) => {
    if (!ACCOUNT_ROUTE.test(route.routePath)) return;
    const own = route.preHandler;
    route.preHandler = own === undefined ? [load] : [load, ...(Array.isArray(own) ? own : [own])];
  });
}
