// GET /console/api/stream (docs/console.md "Live updates"): Server-Sent Events of the member's
// account, woken by the event bus (bus.ts). Last-Event-ID resumes from the events table (at most
// RESUME_MAX after that id); a comment every CONSOLE_KEEPALIVE_MS; at most MAX_PER_MEMBER streams
// per member in a process (the next closes the oldest); a session that ended (logout, member
// disabled or removed, expired) ends its streams at the next event or keep-alive.
import type { ServerResponse } from 'node:http';
import { sql } from 'kysely';
import { ApiError } from '../http/errors.js';
import type { RoutesFn } from '../http/schemas.js';
import { isUuid } from '../lib/ids.js';
import type { Services } from '../services.js';
import type { LiveEvent } from './bus.js';
import { ABSOLUTE_MS, COOKIE, IDLE_MS, sessionOf } from './sessions.js';

export const MAX_PER_MEMBER = 20;
export const RESUME_MAX = 500;

interface Stream {
  res: ServerResponse;
  close(): void;
}

/** The session still holds (read only: a stream does not keep a session from going idle). */
async function sessionHolds(s: Services, tokenHash: string): Promise<boolean> {
  const row = await s.db
    .selectFrom('member_sessions as ms')
    .innerJoin('members as m', 'm.id', 'ms.member_id')
    .select(['m.status', 'ms.created_at', 'ms.last_seen_at'])
    .where('ms.token_hash', '=', tokenHash)
    .executeTakeFirst();
  const now = s.clock.ms();
  return !!row && row.status === 'active' && now - row.last_seen_at.getTime() <= IDLE_MS && now - row.created_at.getTime() <= ABSOLUTE_MS;
}

/** A client this far behind (bytes waiting to be sent) is closed; it resumes with Last-Event-ID. */
const MAX_BUFFERED = 1_000_000;

const frame = (e: LiveEvent): string => `id: ${e.id}\nevent: ${e.kind}\ndata: ${e.data}\n\n`;

export const streamRoutes: RoutesFn = (app, s) => {
  /** This process's open streams per member, oldest first. */
  const byMember = new Map<string, Stream[]>();
  /**
   * One session check per session and event, shared by that session's streams: each is started
   * when the bus hands the event over, after it committed, exactly as a check of its own would be.
   */
  const checks = new Map<string, Promise<boolean>>();
  const holdsFor = (tokenHash: string, eventId: string): Promise<boolean> => {
    const key = `${tokenHash} ${eventId}`;
    let p = checks.get(key);
    if (!p) {
      p = sessionHolds(s, tokenHash);
      p.catch(() => {});
      checks.set(key, p);
      // The bus hands an event to all its listeners in one synchronous loop.
      queueMicrotask(() => checks.delete(key));
    }
    return p;
  };
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
      res.write(': connected\n\n');

      let closed = false;
      let unsubscribe: (() => void) | null = null;
      // Events that arrive while the backlog is read wait here; null once it was sent.
      let waiting: LiveEvent[] | null = [];
      const sent = new Set<string>();
      // One write at a time, in order, each after the session was checked.
      let chain = Promise.resolve();
      const run = (step: () => Promise<void> | void) => {
        chain = chain.then(async () => {
          if (!closed) await step();
        });
        chain.catch(() => stream.close());
      };
      const checked = (holds: () => Promise<boolean>, write: () => void) => async () => {
        if (!(await holds())) return stream.close();
        write();
        if (res.writableLength > MAX_BUFFERED) stream.close();
      };
      const deliver = (e: LiveEvent) => {
        if (sent.has(e.id)) return;
        const holds = holdsFor(tokenHash, e.id);
        run(
          checked(
            () => holds,
            () => res.write(frame(e)),
          ),
        );
      };
      const timer = setInterval(
        () =>
          run(
            checked(
              () => sessionHolds(s, tokenHash),
              () => res.write(': keep-alive\n\n'),
            ),
          ),
        s.config.CONSOLE_KEEPALIVE_MS,
      );
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
        const off = await s.liveEvents.subscribe(accountId, (e) => (waiting ? waiting.push(e) : deliver(e)));
        if (closed) return off();
        unsubscribe = off;
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
            res.write(frame(e));
            sent.add(e.id);
          }
        }
        const held = waiting;
        waiting = null;
        for (const e of held) deliver(e);
      } catch (err) {
        req.log.warn({ err: { message: (err as Error)?.message } }, 'console stream: not started');
        stream.close();
      }
    },
  );
};
