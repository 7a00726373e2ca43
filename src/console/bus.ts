// The console's live events (docs/console.md "Live updates"; decisions.md "Live events"). Every
// event is a row of `events` (the webhook outbox's, or a console-only kind written here), and its
// writer NOTIFYs `chasqui_events` in the same transaction: PostgreSQL (and PGlite) deliver a
// notification only when that transaction commits, to every listening process, in commit order,
// so a stream never shows an event that rolled back. The notification carries the event itself
// ("<accountId> <eventId> <kind> <data>") when it fits, so no process reads it back; a larger one
// carries only "<accountId> <eventId>" and is read. A deleted session (logout, member disabled or
// removed, expired) notifies "- ended <tokenHash>" from a trigger (migration 0029), so its
// streams close at once in every process, before any later event. Accounts without an active
// member (no console, no stream) are never notified.

import type { FastifyBaseLogger } from 'fastify';
import { type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import type { Executor, OpenDb } from '../db/index.js';
import { newId } from '../lib/ids.js';

const CHANNEL = 'chasqui_events';
/** The event's JSON rides in the notification up to this many bytes (PostgreSQL's limit is 8000). */
const INLINE_MAX_BYTES = 7_800;

/** The notification's text: the event itself when it fits, else its account and id. */
const payload = (
  accountId: RawBuilder<unknown> | string,
  eventId: RawBuilder<unknown> | string,
  kind: RawBuilder<unknown> | string,
  dataText: RawBuilder<unknown>,
) => sql`
  CASE WHEN octet_length(${dataText}) <= ${INLINE_MAX_BYTES}
    THEN ${accountId}::text || ' ' || ${eventId}::text || ' ' || ${kind}::text || ' ' || ${dataText}
    ELSE ${accountId}::text || ' ' || ${eventId}::text END`;

/**
 * The NOTIFY of one event (an SQL expression, void), only when the account has an active member.
 * `dataText`: the event's stored `data` as text (`data::text` of the inserted row), so the live
 * frame is byte for byte what a resume reads.
 */
export const notifyConsole = (
  accountId: RawBuilder<unknown> | string,
  eventId: RawBuilder<unknown> | string,
  kind: RawBuilder<unknown> | string,
  dataText: RawBuilder<unknown>,
): RawBuilder<unknown> => sql`
  CASE WHEN EXISTS (SELECT 1 FROM members WHERE account_id = ${accountId}::uuid AND status = 'active')
    THEN pg_notify(${CHANNEL}, ${payload(accountId, eventId, kind, dataText)}) END`;

/** Kinds only the console sees (no webhook carries them). */
export type ConsoleKind = 'message.sent' | 'conversation.updated' | 'campaign.updated';

/**
 * A CTE body: a console-only event for the row of CTE `from` (its `account_id`), written only for an
 * account with an active member; returns `account_id` and `d` (the stored data as text) for
 * `notifyEventsOf`. So a writer adds the event to a statement it runs anyway (the send's
 * `sent` update): no round trip of its own.
 */
export const consoleEventFrom = (from: string, id: string, kind: ConsoleKind, dataJson: string, now: Date): RawBuilder<unknown> => sql`
  INSERT INTO events (id, account_id, kind, data, test, created_at)
  SELECT ${id}, f.account_id, ${kind}, ${dataJson}::jsonb, false, ${now} FROM ${sql.table(from)} f
  WHERE EXISTS (SELECT 1 FROM members m WHERE m.account_id = f.account_id AND m.status = 'active')
  RETURNING account_id, data::text AS d`;

/**
 * The NOTIFY of an event its statement wrote for an account with an active member (an SQL
 * expression, void): `dataText` is the written row's `data::text`.
 */
export const notifyWritten = (
  accountId: RawBuilder<unknown>,
  eventId: RawBuilder<unknown> | string,
  kind: ConsoleKind,
  dataText: RawBuilder<unknown>,
): RawBuilder<unknown> => sql`pg_notify(${CHANNEL}, ${payload(accountId, eventId, kind, dataText)})`;

/** A scalar subquery: the NOTIFY of the event `consoleEventFrom` wrote in CTE `cte`, if it wrote one. */
export const notifyEventOf = (cte: string, id: string, kind: ConsoleKind): RawBuilder<unknown> =>
  sql`(SELECT ${notifyWritten(sql`e.account_id`, id, kind, sql`e.d`)} FROM ${sql.table(cte)} e)`;

/**
 * A console-only event: the row (for Last-Event-ID) and its notification, in one statement, only
 * for an account with an active member. Inside the writer's transaction, or after its commit.
 */
export async function emitConsoleEvent(ex: Executor, accountId: string, kind: ConsoleKind, data: unknown, now: Date): Promise<void> {
  const id = newId();
  await sql`
    WITH a AS (SELECT ${accountId}::uuid AS account_id),
    ev AS (${consoleEventFrom('a', id, kind, JSON.stringify(data), now)})
    SELECT ${notifyEventOf('ev', id, kind)}`.execute(ex);
}

/**
 * `conversation.updated` of the conversations that CTE `from` returns (`RETURNING *` of the update
 * that changed them, or a plain read), for a statement that ends `WITH …, <events> AS (events)
 * SELECT notify`: `events` is a CTE body writing one event per conversation of `ids` found there
 * (accounts with an active member only), `notify` an expression sending their notifications in id
 * order. So a writer of the handling adds its event to its own statement: no round trip of its own.
 * There is no unread count in the schema: the data carries what exists (decisions.md). Its time is
 * the database's (the callers that change handling hold no clock).
 */
export function conversationUpdatedOf(
  from: string,
  eventsCte: string,
  ids: readonly string[],
): { events: RawBuilder<unknown>; notify: RawBuilder<unknown> } {
  const eventIds = ids.map(() => newId());
  const events = sql`
    INSERT INTO events (id, account_id, kind, data, test, created_at)
    SELECT x.eid, c.account_id, 'conversation.updated', jsonb_build_object('id', c.id, 'contactId', c.contact_id,
      'channel', c.channel, 'lastInboundAt', c.last_inbound_at,
      'handling', CASE WHEN c.handling_type IS NULL THEN NULL
        ELSE jsonb_build_object('type', c.handling_type, 'id', c.handling_id, 'name', c.handling_name) END),
      false, now()
    FROM ${sql.table(from)} c JOIN unnest(${[...ids]}::uuid[], ${eventIds}::uuid[]) AS x(cid, eid) ON x.cid = c.id
    WHERE EXISTS (SELECT 1 FROM members m WHERE m.account_id = c.account_id AND m.status = 'active')
    RETURNING id, account_id, data::text AS d`;
  const notify = sql`(SELECT count(${notifyWritten(sql`v.account_id`, sql`v.id`, 'conversation.updated', sql`v.d`)})
    FROM (SELECT * FROM ${sql.table(eventsCte)} ORDER BY id) v)`;
  return { events, notify };
}

export interface LiveEvent {
  id: string;
  kind: string;
  /** The stored JSON text (the webhook's `data`). */
  data: string;
}

/** One event as Server-Sent Events (its data is one line: JSON text has no raw newline). */
export const frameOf = (e: LiveEvent): string => `id: ${e.id}\nevent: ${e.kind}\ndata: ${e.data}\n\n`;

/** Events of one account handed over together, with their frames encoded once for every stream. */
export interface LiveBatch {
  events: LiveEvent[];
  frames: string;
}

type Listener = (batch: LiveBatch) => void;

/**
 * Events are handed to an account's streams in batches, at most one every BATCH_MS: a stream
 * then costs one socket write per batch, not one per event (200 open tabs at 100 inbound
 * messages a second were 80,000 writes a second, and the inbound requests queued behind them).
 */
const BATCH_MS = 20;

/**
 * This process's end of the channel: one LISTEN (a dedicated PostgreSQL connection, or PGlite's
 * own), the streams of each account and the ends of each session. A notification is handled only
 * when a stream of its account (or session) is open here; an event too large to ride in its
 * notification is read once per process.
 */
export class EventBus {
  private readonly byAccount = new Map<string, Set<Listener>>();
  private readonly bySession = new Map<string, Set<() => void>>();
  /** Events waiting for the next batch, per account, in commit order. */
  private pending = new Map<string, LiveEvent[]>();
  private flushTimer: NodeJS.Timeout | null = null;
  private client: pg.Client | null = null;
  private stopPglite: (() => Promise<void>) | null = null;
  private closed = false;
  private starting: Promise<void> | null = null;
  /** Work waiting behind a read of the table (reads and the events after them), in commit order. */
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;

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

  private notified(text: string): void {
    const a = text.indexOf(' ');
    const b = a < 0 ? -1 : text.indexOf(' ', a + 1);
    const head = a < 0 ? text : text.slice(0, a);
    const eventId = a < 0 ? '' : b < 0 ? text.slice(a + 1) : text.slice(a + 1, b);
    if (head === '-') {
      // "- ended <tokenHash>": that session's streams close, after the events committed before.
      const ends = this.bySession.get(text.slice(b + 1));
      if (ends && eventId === 'ended')
        this.inOrder(() => {
          for (const end of [...ends]) end();
        });
      return;
    }
    if (!eventId || !this.byAccount.has(head)) return;
    if (b < 0) {
      this.enqueue(() => this.read(head, eventId));
      return;
    }
    const c = text.indexOf(' ', b + 1);
    if (c < 0) return;
    const e: LiveEvent = { id: eventId, kind: text.slice(b + 1, c), data: text.slice(c + 1) };
    this.inOrder(() => this.hand(head, e));
  }

  /** Runs `fn` now, or after the reads of earlier events still running (commit order kept). */
  private inOrder(fn: () => void): void {
    if (this.queued > 0) this.enqueue(fn);
    else fn();
  }

  private enqueue(fn: () => void | Promise<void>): void {
    this.queued++;
    this.chain = this.chain
      .then(fn)
      .catch(() => {})
      .finally(() => {
        this.queued--;
      });
  }

  private hand(accountId: string, e: LiveEvent): void {
    const list = this.pending.get(accountId);
    if (list) list.push(e);
    else this.pending.set(accountId, [e]);
    this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  private flush(): void {
    this.flushTimer = null;
    const batches = this.pending;
    this.pending = new Map();
    for (const [accountId, events] of batches) {
      const listeners = this.byAccount.get(accountId);
      if (!listeners) continue;
      const batch: LiveBatch = { events, frames: events.map(frameOf).join('') };
      for (const fn of [...listeners]) {
        try {
          fn(batch);
        } catch (err) {
          this.log.warn({ err: { message: (err as Error)?.message } }, 'console stream: event not written');
        }
      }
    }
  }

  private async read(accountId: string, eventId: string): Promise<void> {
    try {
      const e = await this.database.db
        .selectFrom('events')
        .select(['id', 'kind', sql<string>`data::text`.as('data')])
        .where('id', '=', eventId)
        .where('test', '=', false)
        .executeTakeFirst();
      if (e) this.hand(accountId, e);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error)?.message } }, 'console stream: event not read');
    }
  }

  /**
   * The account's events from now on, and `ended` when the session `tokenHash` ends; resolves
   * once listening, with the unsubscribe function.
   */
  async subscribe(accountId: string, fn: Listener, tokenHash?: string, ended?: () => void): Promise<() => void> {
    const set = this.byAccount.get(accountId) ?? new Set<Listener>();
    this.byAccount.set(accountId, set);
    set.add(fn);
    if (tokenHash && ended) {
      const ends = this.bySession.get(tokenHash) ?? new Set();
      this.bySession.set(tokenHash, ends);
      ends.add(ended);
    }
    await this.start();
    return () => {
      const s = this.byAccount.get(accountId);
      if (s) {
        s.delete(fn);
        if (s.size === 0) this.byAccount.delete(accountId);
      }
      const ends = tokenHash ? this.bySession.get(tokenHash) : undefined;
      if (ends && ended) {
        ends.delete(ended);
        if (ends.size === 0) this.bySession.delete(tokenHash!);
      }
    };
  }

  /** Open subscriptions of an account (tests: closing a stream frees its listener). */
  listenersOf(accountId: string): number {
    return this.byAccount.get(accountId)?.size ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.pending.clear();
    this.byAccount.clear();
    this.bySession.clear();
    await this.stopPglite?.().catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = null;
  }
}
