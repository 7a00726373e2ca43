// A send's second write, set-wise: its provider id and `sent`, with its console event
// (`message.sent`, only for an account with an active member) and whether a status report came
// first. Sends whose provider answered in the same turn of the event loop are written by one
// statement — one commit instead of one each, the same rows and events as one by one. A send
// waits at most one turn for the others; the statement takes at most MAX_MARKS of them, the rest
// go in the next. If the statement fails, each mark is written alone, so only a send whose own
// mark fails gets an error (as it would alone). The statement locks its messages' rows in no set
// order; a deadlock with another writer of several of them (a batch of status reports) aborts
// it, and the marks then go one by one like any other failure.
// (docs/architecture.md "Send"; docs/performance.md "Issue 30's figures on a quiet machine")

import { sql } from 'kysely';
import { notifyWritten } from '../console/bus.js';
import type { Executor } from '../db/index.js';

const MAX_MARKS = 200;

export interface SentMark {
  messageId: string;
  wamid: string;
  at: Date;
  /** The id of its `message.sent` console event. */
  eventId: string;
  /** The event's data: the Message record as the update leaves it, as JSON text. */
  record: string;
}

export interface SentOutcome {
  /** False when the message had left `pending` meanwhile (a report reconciled it, or it failed). */
  updated: boolean;
  /** A status report for this wamid was kept before the send's answer (early_statuses). */
  early: boolean;
}

interface Waiting {
  mark: SentMark;
  resolve: (o: SentOutcome) => void;
  reject: (e: unknown) => void;
}

export class SentMarks {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(private readonly db: Executor) {}

  /** Writes the mark with the others of this turn; resolves once its statement committed. */
  mark(mark: SentMark): Promise<SentOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ mark, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_MARKS);
    if (this.queue.length) this.schedule();
    if (batch.length === 0) return;
    try {
      const outcomes = await writeSentMarks(
        this.db,
        batch.map((w) => w.mark),
      );
      for (const w of batch) w.resolve(outcomes.get(w.mark.messageId) ?? { updated: false, early: false });
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One mark the database refuses (a provider id it cannot store) must not fail the others:
      // each is written alone, and only its own send gets its error.
      await Promise.all(
        batch.map((w) =>
          writeSentMarks(this.db, [w.mark]).then(
            (outcomes) => w.resolve(outcomes.get(w.mark.messageId) ?? { updated: false, early: false }),
            w.reject,
          ),
        ),
      );
    }
  }
}

/** One statement for all the marks: the messages still `pending` become `sent`. */
async function writeSentMarks(db: Executor, marks: SentMark[]): Promise<Map<string, SentOutcome>> {
  const r = await sql<{ id: string; early: boolean; notified: unknown }>`
    WITH x AS (
      SELECT * FROM unnest(${marks.map((m) => m.messageId)}::uuid[], ${marks.map((m) => m.wamid)}::text[],
        ${marks.map((m) => m.at)}::timestamptz[], ${marks.map((m) => m.eventId)}::uuid[], ${marks.map((m) => m.record)}::text[])
        AS x(id, wamid, at, eid, rec)),
    m AS (
      UPDATE messages SET wamid = x.wamid, status = 'sent', sent_at = x.at, updated_at = x.at
      FROM x WHERE messages.id = x.id AND messages.status = 'pending' AND messages.wamid IS NULL
      RETURNING messages.id, messages.account_id, x.wamid, x.at, x.eid, x.rec),
    ev AS (
      INSERT INTO events (id, account_id, kind, data, test, created_at)
      SELECT m.eid, m.account_id, 'message.sent', m.rec::jsonb, false, m.at FROM m
      WHERE EXISTS (SELECT 1 FROM members mm WHERE mm.account_id = m.account_id AND mm.status = 'active')
      RETURNING id, account_id, data::text AS d)
    SELECT m.id, EXISTS (SELECT 1 FROM early_statuses WHERE wamid = m.wamid) AS early,
      (SELECT ${notifyWritten(sql`e.account_id`, sql`e.id`, 'message.sent', sql`e.d`)} FROM ev e WHERE e.id = m.eid) AS notified
    FROM m ORDER BY m.id`.execute(db);
  return new Map(r.rows.map((row) => [row.id, { updated: true, early: row.early }]));
}
