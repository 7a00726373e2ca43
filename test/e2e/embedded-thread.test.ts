// The embedded database runs on a thread of its own (docs/architecture.md "The embedded database
// runs on its own thread"): PGlite runs each statement synchronously, and on the server's thread a
// long one (a batch of an import, an export's page) held every request until it ended. Real app;
// on PostgreSQL the same holds by construction, and the test runs there too.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('a long statement holds only the database, not the server', () => {
  // The bound is a fraction of the statement, not a fixed latency: on a loaded CI machine a
  // /healthz can take 175 ms while the point stands (the first one would wait the whole 1.5 s on
  // the server's thread).
  it('"a statement of the embedded database never holds the server": /healthz answers again and again, each within a third of a 1.5 s statement that runs meanwhile', async () => {
    const t0 = performance.now();
    let tookMs = 0;
    const long = sql`SELECT pg_sleep(1.5)`.execute(app.rt.database.db).then(() => {
      tookMs = performance.now() - t0;
    });
    let ended = false;
    void long.finally(() => {
      ended = true;
    });
    const answers: number[] = [];
    while (!ended) {
      const t = performance.now();
      const r = await request(`${app.url}/healthz`, 'GET');
      expect(r.status).toBe(200);
      if (!ended) answers.push(performance.now() - t);
    }
    await long;
    expect(tookMs).toBeGreaterThanOrEqual(1_450);
    // On the server's thread the first /healthz would wait the whole 1.5 s, and there would be one.
    expect(answers.length, `answers during the statement: ${answers.map((a) => a.toFixed(0)).join(', ')}`).toBeGreaterThanOrEqual(5);
    expect(Math.max(...answers)).toBeLessThan(500);
  });
});
