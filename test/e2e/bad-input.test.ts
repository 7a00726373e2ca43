// Bad input never reaches PostgreSQL, and what does never reaches the log: a database error
// never writes its query parameters to the log.
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../harness.js';

/** Every line the runtime's logger writes (pino writes one JSON line per call). */
const logLines: string[] = [];
const logStream = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});

let app: TestApp;
let acc: TestAccount;
beforeAll(async () => {
  app = await startTestApp({ env: { LOG_LEVEL: 'info' }, logDestination: logStream });
  acc = await app.createAccount();
});
afterAll(async () => {
  await app?.close();
});

let phoneSeq = 0;
const freshPhone = () => `54911${String(60000000 + (process.pid % 1000) * 1000 + ++phoneSeq).padStart(8, '0')}`;

describe('"No log line carries SQL parameters, query text or row values, whatever the error"', () => {
  it('a database error is logged with its code, message and stack, without the query, its parameters or the row (no phone, no name)', async () => {
    // A real refusal of the database for one value, so the failing INSERT carries a phone and a name.
    await sql`ALTER TABLE contacts ADD CONSTRAINT test_refuses_name CHECK (name <> 'Rosa Secreta')`.execute(app.rt.services.db);
    const phone = freshPhone();
    const from = logLines.length;
    const res = await acc.call('POST', '/contacts', { phone, name: 'Rosa Secreta', attributes: { pedido: 'pedido-7781' } });
    expect(res.status).toBe(500);
    const written = logLines.slice(from).join('');
    const line = JSON.parse(written.split('\n').find((l) => l.includes('"unexpected error"'))!);
    expect(line.err).toEqual({
      type: expect.any(String),
      message: expect.stringContaining('test_refuses_name'),
      stack: expect.any(String),
      code: '23514',
    });
    for (const secret of [phone, 'Rosa Secreta', 'pedido-7781', 'insert into']) expect(written).not.toContain(secret);
  });
});
