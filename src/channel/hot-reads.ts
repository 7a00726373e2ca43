// What every send reads and almost never changes — an account's numbers and templates — kept in
// this process (docs/architecture.md "Hot reads"; decisions.md "Send"), so a send costs no round
// trip for them in steady state.
//
// Freshness: every writer of `phone_numbers` or `templates` NOTIFYs `chasqui_hot_reads` with the
// account id in its own statement or transaction (announceChange, or pg_notify in the statement's
// RETURNING). PostgreSQL (and PGlite) deliver it when that transaction commits, to every listening
// process: each forgets the account before answering anything else on that connection. Only
// usable answers are kept (a connected number, an APPROVED template): a refusal is always read
// anew, so it is never a stale copy that refuses. Kept only while this process listens: before
// the LISTEN is up, or after its connection dropped (notifications may have been missed), every
// read goes to the database and nothing is kept; listening again forgets everything. A TTL
// bounds what a missed notification could cost (a notification is lost only with its
// connection, and then everything is forgotten anyway).
//
// A read that started before a change and ends after its notification is not kept (the
// generation moved meanwhile), so an old row never lands in the cache after its forget.

import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import type { Executor, OpenDb } from '../db/index.js';
import type { Clock } from '../lib/clock.js';

export const HOT_READS_CHANNEL = 'chasqui_hot_reads';
/** The payload that forgets every account (a pass over every number, e.g. re-sealing the credentials). */
export const EVERY_ACCOUNT = '*';
/** A kept read is used at most this long (the safety net under the notifications). */
export const HOT_READS_TTL_MS = 60_000;
/** Accounts kept, and reads kept per account, before the oldest go. */
const MAX_ACCOUNTS = 10_000;
const MAX_PER_ACCOUNT = 256;
/** A failed LISTEN is tried again after this long. */
const LISTEN_RETRY_MS = 5_000;

/**
 * The notification of a change of these accounts' numbers or templates, as one statement of the
 * writer's transaction (delivered at its commit), or right after the writer's own statement.
 */
export async function announceChange(ex: Executor, accountIds: string | readonly string[]): Promise<void> {
  const ids = typeof accountIds === 'string' ? [accountIds] : [...new Set(accountIds)];
  if (ids.length === 0) return;
  await sql`SELECT pg_notify(${HOT_READS_CHANNEL}, a) FROM unnest(${ids}::text[]) AS a`.execute(ex);
}

/** A RETURNING expression for a writer of rows with `account_id`: its notification rides in the statement. */
export const notifyChangeOfRow = () => sql<string>`pg_notify(${HOT_READS_CHANNEL}, account_id::text)`;

interface Kept {
  value: unknown;
  until: number;
}

export class HotReads {
  private readonly accounts = new Map<string, Map<string, Kept>>();
  /** Moves at every forget: a read that saw another generation at its start is not kept. */
  private generation = 0;
  private listening = false;
  private starting: Promise<void> | null = null;
  private client: pg.Client | null = null;
  private stopPglite: (() => Promise<void>) | null = null;
  private closed = false;
  /** After a failed LISTEN, not before this (wall clock ms). */
  private retryAt = 0;

  constructor(
    private readonly database: OpenDb,
    private readonly url: string | null,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    private readonly ttlMs = HOT_READS_TTL_MS,
  ) {}

  /**
   * The account's value under `key`: this process's copy while it is fresh, else `load()`'s,
   * kept when `keep(value)` says it is a usable answer.
   */
  async read<T>(accountId: string, key: string, load: () => Promise<T>, keep: (value: T) => boolean): Promise<T> {
    if (!this.listening) void this.start();
    const now = this.clock.ms();
    const kept = this.listening ? this.accounts.get(accountId)?.get(key) : undefined;
    if (kept && kept.until > now) return kept.value as T;
    const generation = this.generation;
    const value = await load();
    if (this.listening && generation === this.generation && keep(value)) this.keep(accountId, key, value, now);
    return value;
  }

  /** Forgets the account's kept reads (or every account's with EVERY_ACCOUNT) in this process. */
  forget(accountId: string): void {
    this.generation++;
    if (accountId === EVERY_ACCOUNT) this.accounts.clear();
    else this.accounts.delete(accountId);
  }

  private keep(accountId: string, key: string, value: unknown, now: number): void {
    let reads = this.accounts.get(accountId);
    if (!reads) {
      if (this.accounts.size >= MAX_ACCOUNTS) this.accounts.delete(this.accounts.keys().next().value!);
      reads = new Map();
      this.accounts.set(accountId, reads);
    }
    if (reads.size >= MAX_PER_ACCOUNT) reads.clear();
    reads.set(key, { value, until: now + this.ttlMs });
  }

  /** Listens from the first read on (a process that never sends holds no connection). */
  private start(): Promise<void> {
    if (this.closed || Date.now() < this.retryAt) return Promise.resolve();
    this.starting ??= this.listen().catch((err) => {
      this.starting = null;
      // Not again on every send: reads go to the database meanwhile.
      this.retryAt = Date.now() + LISTEN_RETRY_MS;
      this.log.warn({ err: { message: (err as Error)?.message } }, 'hot reads: LISTEN failed; numbers and templates are read each time');
    });
    return this.starting;
  }

  private async listen(): Promise<void> {
    if (this.database.pglite) {
      this.stopPglite = await this.database.pglite.listen(HOT_READS_CHANNEL, (p) => this.forget(p));
      if (!this.closed) this.up();
      return;
    }
    if (!this.url) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (n) => n.payload && this.forget(n.payload));
    client.on('error', () => {});
    // A lost connection may have missed notifications: nothing kept is used until listening again.
    client.on('end', () => {
      if (this.client !== client) return;
      this.down();
      if (!this.closed) setTimeout(() => void this.start(), 1_000).unref();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${HOT_READS_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.up();
  }

  private up(): void {
    this.forget(EVERY_ACCOUNT);
    this.listening = true;
  }

  private down(): void {
    this.listening = false;
    this.client = null;
    this.starting = null;
    this.forget(EVERY_ACCOUNT);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    this.accounts.clear();
    await this.stopPglite?.().catch(() => {});
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
