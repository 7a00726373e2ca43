// GET /console/api/stream (docs/console.md "Live updates"): Server-Sent Events of the member's
// account, handed over by the event bus (bus.ts). Last-Event-ID resumes from the events table (at
// most RESUME_MAX after that id); a comment every CONSOLE_KEEPALIVE_MS; at most MAX_PER_MEMBER
// streams per member in a process (the next closes the oldest). A session that is deleted (logout,
// member disabled or removed) ends its streams at once through the bus; one that merely runs out
// of time (idle, absolute) ends at the first event or keep-alive past its deadline, which the
// stream knows without asking the database for every event.
import type { ServerResponse } from 'node:http';
import { sql } from 'kysely';
import { ApiError } from '../http/errors.js';
import type { RoutesFn } from '../http/schemas.js';
import { isUuid } from '../lib/ids.js';
import type { Services } from '../services.js';
import { frameOf, type LiveBatch, type LiveEvent } from './bus.js';
import { ABSOLUTE_MS, COOKIE, IDLE_MS, sessionOf } from './sessions.js';

export const MAX_PER_MEMBER = 20;
export const RESUME_MAX = 500;

interface Stream {
  res: ServerResponse;
  close(): void;
}

/**
 * Until when the session holds as the database has it now (ms; 0: it does not): the earlier of its
 * idle and absolute ends. Read only: a stream does not keep a session from going idle.
 */
async function sessionValidUntil(s: Services, tokenHash: string): Promise<number> {
  const row = await s.db
    .selectFrom('member_sessions as ms')
    .innerJoin('members as m', 'm.id', 'ms.member_id')
    .select(['m.status', 'ms.created_at', 'ms.last_seen_at'])
    .where('ms.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (row?.status !== 'active') return 0;
  return Math.min(row.last_seen_at.getTime() + IDLE_MS, row.created_at.getTime() + ABSOLUTE_MS);
}

/** A client this far behind (bytes waiting to be sent) is closed; it resumes with Last-Event-ID. */
const MAX_BUFFERED = 1_000_000;

export const streamRoutes: RoutesFn = (app, s) => {
  /** This process's open streams per member, oldest first. */
  const byMember = new Map<string, Stream[]>();
  app.addHook('preClose', (done) => {
    for (const list of [...byMember.values()]) for (const st of [...list]) st.close();
    done();
  });

  app.get(
    '/console/api/stream',
    { schema: { hide: true, summary: "Server-Sent Events of the member's account (docs/console.md)", tags: ['Console'] } },
    async (req, reply) => {
      const session = await sessionOf(s, req.cookies[COOKIE]);
      if (!session) throw new ApiError('session_required');
      const { member, tokenHash } = session;
      const accountId = member.account_id;
      const last = req.headers['last-event-id'];
      const resumeFrom = typeof last === 'string' && isUuid(last.trim()) ? last.trim() : null;

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache',
        'X-Accel-Buffering': 'no',
        Connection: 'close',
      });

      let closed = false;
      let unsubscribe: (() => void) | null = null;
      let validUntil = session.validUntil;
      // Events that arrive while the backlog is read or the session is re-read wait here, in order;
      // null when events are written as they come.
      let waiting: LiveEvent[] | null = [];
      const sent = new Set<string>();
      const written = () => {
        if (res.writableLength > MAX_BUFFERED) stream.close();
      };
      const write = (e: LiveEvent) => {
        if (closed || sent.has(e.id)) return;
        res.write(frameOf(e));
        written();
      };
      /** A batch as one write (its frames were encoded once for every stream of the account). */
      const writeBatch = (b: LiveBatch) => {
        if (sent.size > 0) for (const e of b.events) write(e);
        else if (!closed) {
          res.write(b.frames);
          written();
        }
      };
      /** Re-reads the session, holding events meanwhile; false (and the stream closed) when it ended. */
      const recheck = async (): Promise<boolean> => {
        waiting ??= [];
        const until = await sessionValidUntil(s, tokenHash).catch(() => 0);
        if (closed) return false;
        if (until <= s.clock.ms()) {
          stream.close();
          return false;
        }
        validUntil = until;
        const held = waiting;
        waiting = null;
        for (const e of held) write(e);
        return true;
      };
      const deliver = (b: LiveBatch) => {
        if (closed) return;
        if (waiting) waiting.push(...b.events);
        else if (s.clock.ms() <= validUntil) writeBatch(b);
        else {
          waiting = [...b.events];
          void recheck();
        }
      };
      const timer = setInterval(() => {
        if (closed || waiting) return;
        void recheck().then((holds) => holds && !closed && res.write(': keep-alive\n\n'));
      }, s.config.CONSOLE_KEEPALIVE_MS);
      timer.unref();

      const stream: Stream = {
        res,
        close() {
          if (closed) return;
          closed = true;
          clearInterval(timer);
          unsubscribe?.();
          const list = byMember.get(member.id);
          const i = list?.indexOf(stream) ?? -1;
          if (list && i >= 0) list.splice(i, 1);
          if (list?.length === 0) byMember.delete(member.id);
          res.end();
        },
      };
      res.on('close', () => stream.close());
      const list = byMember.get(member.id) ?? [];
      byMember.set(member.id, list);
      list.push(stream);
      while (list.length > MAX_PER_MEMBER) list[0]?.close();

      try {
        const off = await s.liveEvents.subscribe(accountId, deliver, tokenHash, () => stream.close());
        if (closed) return off();
        unsubscribe = off;
        // Listening now. A session that ended since it was read (its notification went by before
        // this process listened) is caught by one more read; later ends arrive as notifications.
        if ((await sessionValidUntil(s, tokenHash).catch(() => 0)) <= s.clock.ms()) return stream.close();
        // `connected` means it: every event and session end from here on reaches this stream.
        res.write(': connected\n\n');
        if (resumeFrom) {
          const missed = await s.db
            .selectFrom('events')
            .select(['id', 'kind', sql<string>`data::text`.as('data')])
            .where('account_id', '=', accountId)
            .where('id', '>', resumeFrom)
            .where('test', '=', false)
            .orderBy('id')
            .limit(RESUME_MAX)
            .execute();
          for (const e of missed) {
            if (closed) return;
            res.write(frameOf(e));
            sent.add(e.id);
          }
        }
        const held = waiting ?? [];
        waiting = null;
        for (const e of held) write(e);
        sent.clear();
      } catch (err) {
        req.log.warn({ err: { message: (err as Error)?.message } }, 'console stream: not started');
        stream.close();
      }
    },
  );
};
