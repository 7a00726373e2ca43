// A campaign through a SIGKILL (issue 18): 5,000 recipients at tier 500/s against a fake Graph
// answering in 100 ms; the server is killed after about 3 s of sending, started again on the same
// database, and must finish the campaign with 0 recipients reached twice and counters equal to the
// recipients' own states (the few in flight at the kill are "interrupted": counted failed, never sent again).
import pg from 'pg';
import { admin, benchAccount, connectCloudNumber, must, sleep, startServer, syncCloudTemplate, UNLIMITED } from '../bench/lib.js';
import { startFakeGraph } from '../test/fakes/graph.js';

const AUDIENCE = 5_000;
const TIER = 500;
const KILL_AFTER_MS = 3_000;

export async function campaignsKill(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const graph = await startFakeGraph();
  graph.latencyMs = 100;
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  let server = await startServer({ ...env, GRAPH_API_URL: graph.url });
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-campaigns');
    const { number, cloud } = await connectCloudNumber(server.url, acc.id, '+54 9 11 4200-0000');
    await must(admin(server.url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${number.id}`, { throughputPerSecond: TIER }), 200, 'tier');
    const template = await syncCloudTemplate(server.url, acc.id, graph, cloud.wabaId, {
      name: 'aviso',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Hola' }],
    });
    await client.query(
      `INSERT INTO contacts (id, account_id, phone, name, attributes, opted_out, marketing_opt_out, created_at, updated_at)
       SELECT gen_random_uuid(), $1, '5491170' || lpad(g::text, 6, '0'), 'Cliente ' || g, '{}'::jsonb, false, false, now(), now()
       FROM generate_series(1, $2::int) g`,
      [acc.id, AUDIENCE],
    );
    const campaign = await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/campaigns`, {
        name: 'Corte',
        templateId: template.id,
        phoneNumberId: number.id,
      }),
      201,
      'campaign',
    );
    await sleep(KILL_AFTER_MS);
    await server.kill();
    const atKill = graph.sends().length;
    const t0 = Date.now();
    server = await startServer({ ...env, GRAPH_API_URL: graph.url });
    let c = await must(admin(server.url, 'GET', `/accounts/${acc.id}/campaigns/${campaign.id}`), 200, 'read');
    while (c.status === 'sending' && Date.now() - t0 < 120_000) {
      await sleep(250);
      c = await must(admin(server.url, 'GET', `/accounts/${acc.id}/campaigns/${campaign.id}`), 200, 'read');
    }
    const finishS = (Date.now() - t0) / 1000;
    const to = graph.sends().map((s) => s.body?.to as string);
    const twice = to.length - new Set(to).size;
    const { rows } = await client.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM campaign_recipients WHERE campaign_id = $1 GROUP BY status',
      [campaign.id],
    );
    const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    const interrupted = (
      await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM campaign_recipients WHERE campaign_id = $1 AND status = 'failed' AND error = 'interrupted'",
        [campaign.id],
      )
    ).rows[0]!.n;
    const reachedUnsent = (
      await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM campaign_recipients WHERE campaign_id = $1 AND status = 'sent' AND NOT (phone = any($2::text[]))`,
        [campaign.id, [...new Set(to)]],
      )
    ).rows[0]!.n;
    const exact =
      c.status === 'completed' &&
      c.recipients === AUDIENCE &&
      c.sent === (by.sent ?? 0) &&
      c.failed === (by.failed ?? 0) &&
      (by.sent ?? 0) + (by.failed ?? 0) === AUDIENCE;
    const ok = twice === 0 && exact && reachedUnsent === 0;
    return {
      ok,
      line: `campaign-kill: ${AUDIENCE.toLocaleString('en-US')} recipients at ${TIER}/s, SIGKILL after ${atKill} sends; restart → ${c.status} in ${finishS.toFixed(1)} s; ${twice} reached twice; sent ${c.sent} + failed ${c.failed} (${interrupted} interrupted, in doubt at the kill) = ${c.recipients} recipients = recipient rows ${JSON.stringify(by)}; ${reachedUnsent} counted sent but not at Graph`,
    };
  } finally {
    await server.stop().catch(() => {});
    await client.end();
    await graph.close();
  }
}
