// The console's Casos board on the server: GET /admin/v1/accounts/{id}/pipelines/{pipelineId}/cases
// (docs/operator.md) — the public listing's query with cursor pages, the board's filters (stage,
// status, reason, score bucket, who answered) and each card's contact and last message time; an
// agent's session reads it, another account's pipeline is a 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, signIn } from './console-session.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from './harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const ok = <T>(res: { status: number; body: T }, status = 200): T => {
  if (res.status !== status) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

/** A customer writes (at `minutesAgo`, so the cases open in a known order); the classification job runs. */
async function writes(acc: TestAccount, from: string, text: string, minutesAgo: number, name?: string) {
  const timestamp = new Date(app.clock.ms() - minutesAgo * 60_000).toISOString();
  const r = ok(await app.inbound({ accountId: acc.id, from, text, timestamp, ...(name ? { name } : {}) }), 201);
  ok(await app.admin('POST', '/jobs/classification/run'));
  const conv = ok(await acc.call('GET', `/conversations/${r.conversationId}`));
  return { conversationId: r.conversationId as string, caseId: conv.openCaseId as string };
}

describe('GET /admin/v1/accounts/{id}/pipelines/{pipelineId}/cases', () => {
  it('pages by cursor newest first with contact and last message time; filters stage, status, reason, score and handledBy; 404 elsewhere; an agent reads it', async () => {
    const acc = await app.createAccount({ name: 'Muebles Lola' });
    const pipeline = ok(
      await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
        name: 'Ventas',
        stages: [
          { name: 'Nuevo', kind: 'open' },
          { name: 'Presupuestado', kind: 'open' },
          { name: 'Vendido', kind: 'won' },
        ],
      }),
      201,
    );
    const [nuevo, presupuestado] = pipeline.stages;
    ok(
      await app.admin('POST', `/accounts/${acc.id}/reasons`, {
        name: 'Presupuesto',
        keywords: ['presupuesto'],
        scoring: {
          questions: [
            { question: '¿Tiene fecha?', weight: 70, keywords: ['fecha'] },
            { question: '¿Es empresa?', weight: 30, keywords: ['empresa'] },
          ],
        },
      }),
      201,
    );
    const phones = [freshPhone(), freshPhone(), freshPhone(), freshPhone(), freshPhone()];
    // Oldest first: hot (70), cold (30), no reason, answered by the team, moved and closed.
    const hot = await writes(acc, phones[0]!, 'Presupuesto para esta fecha', 50, 'Ana Caliente');
    const cold = await writes(acc, phones[1]!, 'Presupuesto para mi empresa', 40);
    const plain = await writes(acc, phones[2]!, 'Hola', 30);
    const team = await writes(acc, phones[3]!, 'Buen día', 20);
    const moved = await writes(acc, phones[4]!, 'Quiero la mesa', 10);
    ok(
      await app.admin('POST', `/accounts/${acc.id}/conversations/${team.conversationId}/messages`, {
        text: 'Hola, ¿en qué te ayudo?',
        by: { name: 'Lola' },
      }),
      201,
    );
    ok(await acc.call('POST', `/cases/${moved.caseId}/stage`, { stageId: presupuestado.id }));
    ok(await app.admin('POST', `/accounts/${acc.id}/cases/${moved.caseId}/close`));

    const path = `/accounts/${acc.id}/pipelines/${pipeline.id}/cases`;
    const list = async (query: string) => ok(await app.admin('GET', `${path}${query}`)) as any;
    const ids = async (query: string) => (await list(query)).data.map((c: any) => c.id);

    // Cursor pages, newest first, with nothing lost or repeated.
    const first = await list('?limit=2');
    expect(first.data.map((c: any) => c.id)).toEqual([moved.caseId, team.caseId]);
    expect(first).toMatchObject({ hasMore: true, nextCursor: team.caseId });
    const second = await list(`?limit=2&after=${first.nextCursor}`);
    expect(second.data.map((c: any) => c.id)).toEqual([plain.caseId, cold.caseId]);
    const third = await list(`?limit=2&after=${second.nextCursor}`);
    expect(third).toMatchObject({ hasMore: false, nextCursor: null });
    expect(third.data.map((c: any) => c.id)).toEqual([hot.caseId]);

    // The card: the Case, its contact (name, phone) and the conversation's last message time.
    expect(third.data[0]).toMatchObject({
      id: hot.caseId,
      conversationId: hot.conversationId,
      contactName: 'Ana Caliente',
      contact: { name: 'Ana Caliente', phone: expect.any(String) },
      reason: 'Presupuesto',
      score: 70,
      scoreBucket: 'hot',
      stage: { stage: { id: nuevo.id, name: 'Nuevo' } },
    });
    expect(third.data[0].contact.phone.replace(/\D/g, '')).toBe(phones[0]!.replace(/\D/g, ''));
    const lastOf = async (conversationId: string) =>
      (ok(await acc.call('GET', `/conversations/${conversationId}/messages?limit=200`)) as any).data.at(-1);
    expect(third.data[0].lastMessageAt).toBe((await lastOf(hot.conversationId)).createdAt);
    // The team's reply is the conversation's last message, and the case was answered by a person.
    const reply = await lastOf(team.conversationId);
    expect(reply).toMatchObject({ direction: 'outbound', text: 'Hola, ¿en qué te ayudo?' });
    expect(first.data[1]).toMatchObject({ handledBy: 'human', lastMessageAt: reply.createdAt });

    // The filters, alone and together.
    expect(await ids(`?stage=${presupuestado.id}`)).toEqual([moved.caseId]);
    expect(await ids(`?stage=${nuevo.id}&status=open`)).toEqual([team.caseId, plain.caseId, cold.caseId, hot.caseId]);
    expect(await ids('?status=closed')).toEqual([moved.caseId]);
    expect(await ids('?reason=presupuesto')).toEqual([cold.caseId, hot.caseId]);
    expect(await ids('?score=hot')).toEqual([hot.caseId]);
    expect(await ids('?score=cold')).toEqual([cold.caseId]);
    expect(await ids('?score=warm')).toEqual([]);
    expect(await ids('?score=none')).toEqual([moved.caseId, team.caseId, plain.caseId]);
    expect(await ids('?handledBy=human')).toEqual([team.caseId]);
    expect(await ids('?handledBy=none&status=open&reason=Presupuesto&score=cold')).toEqual([cold.caseId]);
    // The cursor with a filter.
    const page = await list('?status=open&limit=1');
    expect(await ids(`?status=open&limit=10&after=${page.nextCursor}`)).toEqual([plain.caseId, cold.caseId, hot.caseId]);

    // Bad input: a clear 400, never a 500.
    for (const q of ['?score=tibio', '?handledBy=bot', '?status=x', '?limit=0', '?limit=201', '?after=nope', '?stage=nope']) {
      expect((await app.admin('GET', `${path}${q}`)).status, q).toBe(400);
    }

    // Another account's pipeline, an unknown one → 404.
    const other = await app.createAccount();
    expect((await app.admin('GET', `/accounts/${other.id}/pipelines/${pipeline.id}/cases`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${acc.id}/pipelines/00000000-0000-4000-8000-000000000000/cases`)).status).toBe(404);

    // An agent's session reads it (GET /pipelines/** is agent-readable); another account's id is a 404.
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const asAgent = await agent.call('GET', `/accounts/${acc.id}/pipelines/${pipeline.id}/cases?status=open&limit=50`);
    expect(asAgent.status).toBe(200);
    expect(asAgent.body.data).toHaveLength(4);
    expect((await agent.call('GET', `/accounts/${other.id}/pipelines/${pipeline.id}/cases`)).status).toBe(404);

    // The public listing answers the same cases from the same query (offset pages, no card fields).
    const pub = ok(await acc.call('GET', `/pipelines/${pipeline.id}/cases?status=open&limit=2&offset=1`));
    expect(pub.data.map((c: any) => c.id)).toEqual([plain.caseId, cold.caseId]);
    expect(pub).toMatchObject({ hasMore: true, nextOffset: 3 });
    expect(pub.data[0].contact).toBeUndefined();
  });
});
