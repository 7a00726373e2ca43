// `npm run bench`: each figure next to its floor, measured in the same run on the same machine,
// printed as a ratio and written to bench/results.json. PostgreSQL when DATABASE_URL is set (a
// fresh database per server), else PGlite in a temporary DATA_DIR; Redis counters when REDIS_URL
// is set. `BENCH_ONLY=me,contacts` runs some figures only (`BENCH_ONLY=mcp`: the MCP tool call; `BENCH_ONLY=receiver`: the WhatsApp Cloud receiver;
// `BENCH_ONLY=metrics`: GET /me with metrics on vs off; `BENCH_ONLY=console`: the console's live stream;
// `BENCH_ONLY=contacts-import`: a 100,000-row contact CSV import and GET /me meanwhile; `BENCH_ONLY=board`: the console's Casos board with 10,000 open cases, in chromium; `BENCH_ONLY=secrets`:
// POST /messages through the Cloud provider with sealed credentials against plain ones, PostgreSQL only).
// Speed is measured here, never asserted in timed tests (docs/performance.md).
import { cpus } from 'node:os';
import { agentFigures } from './figures/agents.js';
import { automationFigures } from './figures/automations.js';
import { boardFigure } from './figures/board.js';
import { campaignFigures } from './figures/campaigns.js';
import { casesFigure } from './figures/cases.js';
import { consoleStreamFigure } from './figures/console.js';
import { contactFigures } from './figures/contacts.js';
import { contactImportFigures } from './figures/contacts-import.js';
import { mcpFigures } from './figures/mcp.js';
import { meFigures } from './figures/me.js';
import { messageFigure } from './figures/messages.js';
import { metricsFigure } from './figures/metrics.js';
import { receiverFigure } from './figures/receiver.js';
import { rssFigure } from './figures/rss.js';
import { secretsFigure } from './figures/secrets.js';
import { webhookFigures } from './figures/webhooks.js';
import { BASE_URL, removeTempDirs, serverEnv, startServer } from './lib.js';
import { writeResults } from './report.js';

async function main() {
  const database = BASE_URL ? 'PostgreSQL' : 'PGlite';
  console.log(
    `Chasqui bench on ${database}${process.env.REDIS_URL ? ' + Redis' : ''} — ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}`,
  );
  const only = process.env.BENCH_ONLY?.split(',');
  const want = (name: string) => !only || only.includes(name);
  const { env, db } = await serverEnv('bench');
  // BENCH_ENTRY and BENCH_NODE_ARGS reach every figure's server (bench/lib.ts startServer).
  let server = await startServer(env);
  try {
    if (want('me')) server = await meFigures(server);
    let floors = { plain: Number.NaN, withAttributes: Number.NaN };
    if (want('contacts')) floors = await contactFigures(server);
    if (want('messages')) await messageFigure(server, floors);
    if (want('rss')) await rssFigure(server);
    if (want('cases')) await casesFigure(server);
    if (want('automations')) await automationFigures(server);
    if (want('mcp')) await mcpFigures(server);
    if (want('receiver')) await receiverFigure(server);
  } finally {
    await server.stop();
    await db?.drop();
  }
  if (want('metrics')) await metricsFigure();
  if (want('webhooks')) await webhookFigures();
  if (want('agents')) await agentFigures();
  if (want('campaigns')) await campaignFigures();
  if (want('console')) await consoleStreamFigure();
  if (want('board')) await boardFigure();
  if (want('contacts-import')) await contactImportFigures();
  if (want('secrets')) await secretsFigure();
  removeTempDirs();
  console.log(`\nWritten ${writeResults(database)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
