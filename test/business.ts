// A small business's data made through the real app, and the answers that show it: what the
// move, backup and restore tests compare before and after (docs/operating.md "Moving from the
// embedded database to PostgreSQL", "Backups and restores").
import { expect } from 'vitest';
import { createFlow, runDue, writes } from './automations.js';
import type { Receiver } from './fakes/receiver.js';
import { freshPhone, type TestAccount, type TestApp } from './harness.js';
import { until } from './poll.js';

export interface Business {
  acct: TestAccount;
  pipelineId: string;
  webhookId: string;
  automationId: string;
  sentId: string;
  conversationId: string;
}

const ORDER_FLOW = {
  name: 'Estado del pedido',
  trigger: { type: 'keyword', keywords: ['estado'], match: 'exact' },
  steps: [
    { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' },
    { id: 's', type: 'send', text: 'Buscando el pedido {{pedido}}' },
  ],
};

/**
 * An account with a webhook (its first delivery answered 500, then retried), a pipeline, a
 * contact with attributes who writes (a case opens) and gets an answer, and a finished
 * automation execution with its step log. Returns once every delivery has succeeded.
 */
export async function populate(app: TestApp, receiver: Receiver): Promise<Business> {
  const acct = await app.createAccount({ name: 'Almacén Ñandú' });
  receiver.queue.push({ status: 500 });
  const wh = await app.admin('POST', `/accounts/${acct.id}/webhooks`, { url: receiver.url });
  expect(wh.status).toBe(201);
  const stages = [
    { name: 'Consulta', kind: 'open' },
    { name: 'Ganado', kind: 'won' },
    { name: 'Perdido', kind: 'lost' },
  ];
  const pipeline = await app.admin('POST', `/accounts/${acct.id}/pipelines`, { name: 'Ventas', stages });
  expect(pipeline.status).toBe(201);

  const phone = freshPhone();
  const contact = await acct.call('POST', '/contacts', {
    phone,
    name: 'Ana Pérez',
    attributes: { ciudad: 'Rosario', plan: 'oro', visitas: '3' },
  });
  expect(contact.status).toBe(201);
  const { conversationId } = await writes(app, acct, phone, 'Hola, ¿tienen yerba "suave"?');
  const sent = await acct.call('POST', '/messages', { to: phone, text: 'Hola Ana, sí: 1 kg a $ 4.500,50' });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);

  const flow = await createFlow(app, acct, ORDER_FLOW);
  const other = freshPhone();
  await writes(app, acct, other, 'estado');
  await runDue(app);
  await writes(app, acct, other, 'A-12');
  await runDue(app);

  // Every event delivered: the first attempt failed (500), the retry succeeded.
  await until(async () => {
    app.clock.advance(2_000);
    expect((await app.admin('POST', '/jobs/webhooks/run')).status).toBe(200);
    const list = await app.admin('GET', `/accounts/${acct.id}/webhooks/${wh.body.id}/deliveries?limit=100`);
    return list.body.data.length > 3 && list.body.data.every((d: { status: string }) => d.status === 'succeeded');
  });
  return { acct, pipelineId: pipeline.body.id, webhookId: wh.body.id, automationId: flow.id, sentId: sent.body.id, conversationId };
}

/** What the customer API and the operator API answer about the business; asserts each is 200. */
export async function answers(app: TestApp, b: Business): Promise<Record<string, unknown>> {
  const { acct } = b;
  const api = (path: string) => app.api(acct.key, 'GET', path);
  const admin = (path: string) => app.admin('GET', `/accounts/${acct.id}${path}`);
  const got: Record<string, { status: number; body: any }> = {
    contacts: await api('/contacts'),
    sent: await api(`/messages/${b.sentId}`),
    conversation: await api(`/conversations/${b.conversationId}/messages`),
    cases: await api(`/pipelines/${b.pipelineId}/cases`),
    deliveries: await admin(`/webhooks/${b.webhookId}/deliveries?limit=100`),
    executions: await admin(`/automations/${b.automationId}/executions`),
  };
  // The delivery retried after the 500: its attempt log has two attempts.
  const delivery = [...got.deliveries!.body.data].sort((x: any, y: any) => y.attempts - x.attempts)[0];
  got.delivery = await admin(`/webhooks/${b.webhookId}/deliveries/${delivery.id}`);
  got.execution = await admin(`/automations/${b.automationId}/executions/${got.executions!.body.data[0].id}`);
  for (const [name, res] of Object.entries(got)) expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(200);
  return Object.fromEntries(Object.entries(got).map(([name, res]) => [name, res.body]));
}
