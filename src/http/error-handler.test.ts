import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './error-handler.js';

describe('"a database error is one raised by pg or PGlite" (decisions.md "Slow clients": a vanished client is no outage)', () => {
  it('pg refused a connection: unavailable (503)', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const err = await new pg.Client({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2000 }).connect().catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('ECONNREFUSED');
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('SQLSTATE connection exceptions and pg pool texts: unavailable', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(
      true,
    );
    expect(isDatabaseUnavailable(Object.assign(new Error('connection failure'), { code: '08006' }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });

  it('a request stream aborted by its client (ECONNRESET, no system call): not the database', () => {
    // What node:http raises on a request whose client vanished, and what a client socket hang-up looks like.
    const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
    expect(isDatabaseUnavailable(aborted)).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(false);
  });
});
