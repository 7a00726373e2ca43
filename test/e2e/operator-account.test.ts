// The operator API's account routes: every /admin/v1/accounts/{id}… route loads its account in one
// preHandler (src/admin/account.ts), so an unknown account answers the same 404 on each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('"an unknown account → 404 account_not_found" on every operator route of an account', () => {
  it('each GET and DELETE under /accounts/{id} of the operator document answers it; a malformed id is still the 404 not_found of validation', async () => {
    const doc = await app.admin('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    const routes = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => path.startsWith('/admin/v1/accounts/{id}'))
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })))
      .filter((r) => r.method === 'GET' || r.method === 'DELETE');
    expect(routes.length).toBeGreaterThan(15);
    const nobody = newId();
    for (const r of routes) {
      const path = r.path.replace('/admin/v1', '').replace(/\{[^}]+\}/g, (p) => (p === '{id}' ? nobody : newId()));
      const res = await app.admin(r.method, path);
      expect({ route: `${r.method} ${r.path}`, status: res.status, body: res.body }).toEqual({
        route: `${r.method} ${r.path}`,
        status: 404,
        body: { error: textFor('account_not_found'), cause: null },
      });
    }
    // Validation runs before the preHandler, as before: an id that is not a UUID names nothing.
    const bad = await app.admin('GET', '/accounts/not-an-id/keys');
    expect({ status: bad.status, body: bad.body }).toEqual({ status: 404, body: { error: textFor('not_found'), cause: null } });
  });

  it('an existing account still reaches the handler: its own resources 404 with their own code', async () => {
    const acc = await app.createAccount();
    const res = await app.admin('GET', `/accounts/${acc.id}/agents/${newId()}`);
    expect(res.status).toBe(404);
    expect(res.body.error).not.toBe(textFor('account_not_found'));
  });
});
