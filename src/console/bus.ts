// The console's live events (docs/console.md "Live updates"; decisions.md "Live events"). Every
// event is a row of `events` (the webhook outbox's, or a console-only kind written here), and its
// writer NOTIFYs `chasqui_events` with "<accountId> <eventId>" in the same transaction: PostgreSQL
// (and PGlite) deliver a notification only when that transaction commits, to every listening
// process, so a stream never shows an event that rolled back. Accounts without an active member
// (no console, no stream) are never notified.

import type { FastifyBaseLogger } from 'fastify';
import { type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import type { Executor, OpenDb } from '../db/index.js';
import { newId } from '../lib/ids.js';

const CHANNEL = 'chasqui_events';

/** The NOTIFY of one event (an SQL expression, void), only when the account has an active member. */
export const notifyConsole = (accountId: RawBuilder<unknown> | string, eventId: string): RawBuilder<unknown> => sql`
  CASE WHEN EXISTS (SELECT 1 FROM members WHERE account_id = ${accountId}::uuid AND status = 'active')
    THEN pg_notify(${CHANNEL}, ${accountId}::text || ' ' || ${eventId}::text) END`;

/** Kinds only the console sees (no webhook carries them). */
export type ConsoleKind = 'message.sent' | 'conversation.updated' | 'campaign.updated';

/**
 * A console-only event: the row (for Last-Event-ID) and its notification, in one statement, only
 * for an account with an active member. Inside the writer's transaction, or after its commit.
 */
export async function emitConsoleEvent(ex: Executor, accountId: string, kind: ConsoleKind, data: unknown, now: Date): Promise<void> {
  const id = newId();
  await sql`
    WITH ev AS (
      INSERT INTO events (id, account_id, kind, data, test, created_at)
      SELECT ${id}, ${accountId}, ${kind}, ${JSON.stringify(data)}::jsonb, false, ${now}
      WHERE EXISTS (SELECT 1 FROM members WHERE account_id = ${accountId} AND status = 'active'))
    SELECT ${notifyConsole(accountId, id)}`.execute(ex);
}

/**
 * `conversation.updated` of one conversation (its handling now), read and written in one statement.
 * There is no unread count in the schema: the data carries what exists (decisions.md). Its time is
 * the database's (the callers that change handling hold no clock).
 */
export async function conversationUpdated(ex: Executor, conversationId: string): Promise<void> {
  const id = newId();
  await sql`
    WITH c AS (
      SELECT id, account_id, contact_id, channel, last_inbound_at, handling_type, handling_id, handling_name
      FROM conversations WHERE id = ${conversationId}
        AND EXISTS (SELECT 1 FROM members m WHERE m.account_id = conversations.account_id AND m.status = 'active')),
    ev AS (
      INSERT INTO events (id, account_id, kind, data, test, created_at)
      SELECT ${id}, c.account_id, 'conversation.updated', jsonb_build_object('id', c.id, 'contactId', c.contact_id,
        'channel', c.channel, 'lastInboundAt', c.last_inbound_at,
        'handling', CASE WHEN c.handling_type IS NULL THEN NULL
          ELSE jsonb_build_object('type', c.handling_type, 'id', c.handling_id, 'name', c.handling_name) END),
        false, now() FROM c)
    SELECT pg_notify(${CHANNEL}, c.account_id::text || ' ' || ${id}::text) FROM c`.execute(ex);
}

export interface LiveEvent {
  id: string;
  kind: string;
  /** The stored JSON text (the webhook's `data`). */
  data: string;
}

type Listener = (e: LiveEvent) => void;

/**
 * This process's end of the channel: one LISTEN (a dedicated PostgreSQL connection, or PGlite's
 * own), and the streams of each account. An event is read once per process, only when a stream of
 * its account is open here.
 */
export class EventBus {
  private readonly byAccount = new Map<string, Set<Listener>>();
  private client: pg.Client | null = null;
  private stopPglite: (() => Promise<void>) | null = null;
  private closed = false;
  private starting: Promise<void> | null = null;
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly database: OpenDb,
    private readonly url: string | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Listens from the first subscriber on (a process with no stream holds no connection). */
  private start(): Promise<void> {
    this.starting ??= this.listen().catch((err) => {
      this.starting = null;
      this.log.error({ err: { message: (err as Error)?.message } }, 'console stream: LISTEN failed');
    });
    return this.starting;
  }

  private async listen(): Promise<void> {
    if (this.database.pglite) {
      this.stopPglite = await this.database.pglite.listen(CHANNEL, (p) => this.notified(p));
      return;
    }
    if (!this.url) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (n) => n.payload && this.notified(n.payload));
    // A lost connection listens again (events in between reach a stream on its next resume).
    client.on('error', () => {});
    client.on('end', () => {
      if (this.client !== client || this.closed) return;
      this.client = null;
      this.starting = null;
      setTimeout(() => void (this.byAccount.size > 0 && this.start()), 1_000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
  }

  private notified(payload: string): void {
    const [accountId, eventId] = payload.split(' ');
    if (!accountId || !eventId || !this.byAccount.has(accountId)) return;
    // One read at a time: the streams get the events in the order they were committed.
    this.reading = this.reading.then(() => this.read(accountId, eventId));
  }

  private async read(accountId: string, eventId: string): Promise<void> {
    try {
      const e = await this.database.db
        .selectFrom('events')
        .select(['id', 'kind', sql<string>`data::text`.as('data')])
        .where('id', '=', eventId)
        .where('test', '=', false)
        .executeTakeFirst();
      if (!e) return;
      for (const fn of this.byAccount.get(accountId) ?? []) fn(e);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error)?.message } }, 'console stream: event not read');
    }
  }

  /** The account's events from now on; resolves once listening, with the unsubscribe function. */
  async subscribe(accountId: string, fn: Listener): Promise<() => void> {
    const set = this.byAccount.get(accountId) ?? new Set<Listener>();
    this.byAccount.set(accountId, set);
    set.add(fn);
    await this.start();
    return () => {
      const s = this.byAccount.get(accountId);
      if (!s) return;
      s.delete(fn);
      if (s.size === 0) this.byAccount.delete(accountId);
    };
  }

  /** Open subscriptions (tests: closing a stream frees its listener). */
  get listeners(): number {
    let n = 0;
    for (const s of this.byAccount.values()) n += s.size;
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.byAccount.clear();
    await this.stopPglite?.().catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = null;
  }
}
