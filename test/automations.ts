// What the automation tests do over and over through the operator API: create an active flow,
// run what is due (POST /admin/v1/jobs/automations/run, by the injected clock), read executions
// with their step log, write as the customer through the sandbox. Each takes the app (a second
// process, or a restarted one, works the same).
import { expect } from 'vitest';
import type { TestAccount, TestApp } from './harness.js';

type App = Pick<TestApp, 'admin' | 'inbound'>;

/** Runs everything due now by the app's clock. */
export async function runDue(app: Pick<App, 'admin'>) {
  const r = await app.admin('POST', '/jobs/automations/run');
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r;
}

/** Creates an automation, active unless the body says otherwise; asserts the 201. */
export async function createFlow(app: Pick<App, 'admin'>, acct: TestAccount, body: Record<string, unknown>) {
  const r = await app.admin('POST', `/accounts/${acct.id}/automations`, { status: 'active', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

/** The automation's executions, newest first. */
export async function executions(app: Pick<App, 'admin'>, acct: TestAccount, automationId: string): Promise<any[]> {
  const r = await app.admin('GET', `/accounts/${acct.id}/automations/${automationId}/executions`);
  expect(r.status).toBe(200);
  return r.body.data;
}

/** One execution with its step log. */
export async function execution(app: Pick<App, 'admin'>, acct: TestAccount, automationId: string, id: string) {
  const r = await app.admin('GET', `/accounts/${acct.id}/automations/${automationId}/executions/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

/** The newest execution, with its step log. */
export async function lastExecution(app: Pick<App, 'admin'>, acct: TestAccount, automationId: string) {
  const list = await executions(app, acct, automationId);
  expect(list.length).toBeGreaterThan(0);
  return execution(app, acct, automationId, list[0].id);
}

/** The customer writes through the sandbox (the real inbound path). */
export async function writes(
  app: Pick<App, 'inbound'>,
  acct: TestAccount,
  from: string,
  text: string,
  extra: Record<string, unknown> = {},
) {
  const r = await app.inbound({ accountId: acct.id, from, text, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { conversationId: string; contactId: string };
}

/**
 * The helpers above bound to a test file's app, read when called (files start their app in
 * beforeAll): `const { runDue, createFlow } = automationsOf(() => app)`.
 */
export function automationsOf(get: () => App) {
  return {
    runDue: () => runDue(get()),
    createFlow: (acct: TestAccount, body: Record<string, unknown>) => createFlow(get(), acct, body),
    executions: (acct: TestAccount, automationId: string) => executions(get(), acct, automationId),
    execution: (acct: TestAccount, automationId: string, id: string) => execution(get(), acct, automationId, id),
    lastExecution: (acct: TestAccount, automationId: string) => lastExecution(get(), acct, automationId),
    writes: (acct: TestAccount, from: string, text: string, extra: Record<string, unknown> = {}) => writes(get(), acct, from, text, extra),
  };
}
