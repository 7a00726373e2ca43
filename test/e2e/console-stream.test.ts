// The console's live events over HTTP (docs/console.md "Live updates"; spec console.md "Live updates").
import { get as httpGet } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../src/webhooks/outbox.js';
import { addMember, type Console, signIn } from '../console-session.js';
import { freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

interface SseEvent {
  id: string;
  event: string;
  data: any;
}

interface Sse {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  ended: boolean;
  close(): void;
}

/** Opens GET /console/api/stream on a connection of its own (node:http) and parses its body as it arrives. */
function openStream(app: TestApp, cookie: string, headers: Record<string, string> = {}): Promise<Sse> {
  return new Promise((resolve, reject) => {
    const req = httpGet(`${app.url}/console/api/stream`, { headers: { cookie, ...headers }, agent: false }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
      const sse: Sse = { status: res.statusCode ?? 0, headers: h, events: [], comments: [], ended: false, close: () => req.destroy() };
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) sse.comments.push(line.slice(1).trim());
            else {
              const at = line.indexOf(': ');
              fields[line.slice(0, at)] = line.slice(at + 2);
            }
          }
          if (fields.event) sse.events.push({ id: fields.id ?? '', event: fields.event, data: JSON.parse(fields.data ?? 'null') });
        }
      });
      const ended = () => {
        sse.ended = true;
        resolve(sse);
      };
      res.on('end', ended);
      res.on('close', ended);
      res.on('error', ended);
      // Open as the server means it: a refusal at once; a stream once it says `connected`.
      if (sse.status !== 200) resolve(sse);
      else res.on('data', () => sse.comments.includes('connected') && resolve(sse));
    });
    req.on('error', reject);
  });
}

async function until<T>(what: string, fn: () => T | undefined | false, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ofKind = (sse: Sse, kind: string) => sse.events.filter((e) => e.event === kind);

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { CONSOLE_KEEPALIVE_MS: '200' } });
});
afterAll(async () => {
  await app?.close();
});

async function memberOf(acc: TestAccount, role = 'agent', on: TestApp = app): Promise<Console> {
  return signIn(on, await addMember(app, acc.id, role));
}

describe('"GET /console/api/stream (session): Server-Sent Events of the member\'s account"', () => {
  it('no session → 401; the stream answers text/event-stream, no-cache, X-Accel-Buffering: no', async () => {
    const none = await request(`${app.url}/console/api/stream`, 'GET');
    expect(none.status).toBe(401);
    const bad = await openStream(app, 'chasqui_session=nope');
    expect(bad.status).toBe(401);
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const sse = await openStream(app, m.cookie);
    try {
      expect(sse.status).toBe(200);
      expect(sse.headers.get('content-type')).toBe('text/event-stream');
      expect(sse.headers.get('cache-control')).toBe('no-cache');
      expect(sse.headers.get('x-accel-buffering')).toBe('no');
    } finally {
      sse.close();
    }
  });

  it('"every event kind of api.md\'s webhooks … each as `event: <kind>` with the same `data` JSON as the webhook"; another account\'s events never arrive', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const agent = await memberOf(acc, 'agent');
    const otherOwner = await memberOf(other, 'owner');
    const mine = await openStream(app, agent.cookie);
    const theirs = await openStream(app, otherOwner.cookie);
    try {
      const from = freshPhone();
      expect((await app.inbound({ accountId: acc.id, from, text: 'Hola, ¿tienen stock?' })).status).toBe(201);
      const got = await until('message.received', () => ofKind(mine, 'message.received')[0]);
      const [stored] = await app.events(acc.id, 'message.received');
      expect(got.data).toEqual(stored?.data);
      expect(got.data).toMatchObject({ text: 'Hola, ¿tienen stock?', contact: { phone: from.replace(/\D/g, '') } });
      expect(got.id).toMatch(/^[0-9a-f-]{36}$/);
      // contact.created came first, in the same order as the webhooks.
      expect(mine.events.map((e) => e.event).slice(0, 2)).toEqual(['contact.created', 'message.received']);
      // The other account's stream saw nothing of it, even after events of its own.
      await app.inbound({ accountId: other.id, from: freshPhone(), text: 'otra cuenta' });
      await until("the other account's message", () => ofKind(theirs, 'message.received')[0]);
      expect(theirs.events.every((e) => e.data?.text !== 'Hola, ¿tienen stock?')).toBe(true);
      expect(mine.events.some((e) => e.data?.text === 'otra cuenta')).toBe(false);
    } finally {
      mine.close();
      theirs.close();
    }
  });

  it('"plus `message.sent` … for outbound messages and `conversation.updated` (handling…)": a team reply streams both', async () => {
    const acc = await app.createAccount();
    const agent = await memberOf(acc, 'agent');
    const sse = await openStream(app, agent.cookie);
    try {
      const from = freshPhone();
      await app.inbound({ accountId: acc.id, from, text: 'Quiero hablar con alguien' });
      const received = await until('message.received', () => ofKind(sse, 'message.received')[0]);
      // An API send: message.sent with the Message record the API answered.
      const sent = await acc.call('POST', '/messages', { to: from, text: 'Ya te atendemos' });
      expect(sent.status).toBe(201);
      const api = await until('message.sent', () => ofKind(sse, 'message.sent')[0]);
      expect(api.data).toEqual(sent.body);
      // A team reply through the console takes the conversation over: conversation.updated.
      const conversationId = received.data.conversationId as string;
      const reply = await agent.call('POST', `/accounts/${acc.id}/conversations/${conversationId}/messages`, {
        text: 'Hola, soy del equipo',
      });
      expect(reply.status).toBe(201);
      const updated = await until('conversation.updated', () => ofKind(sse, 'conversation.updated')[0]);
      expect(updated.data).toMatchObject({ id: conversationId, handling: { type: 'team' } });
      const team = await until('the reply', () => ofKind(sse, 'message.sent').find((e) => e.data.text === 'Hola, soy del equipo'));
      expect(team.data).toMatchObject({ id: reply.body.id, direction: 'outbound', status: 'sent' });
    } finally {
      sse.close();
    }
  });

  it('"`conversation.updated` (handling…)": an automation paused with two waiting executions lets both conversations go, one event each', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const flow = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      status: 'active',
      name: 'Pregunta',
      trigger: { type: 'keyword', keywords: ['pedido'], match: 'exact' },
      steps: [{ id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' }],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    const sse = await openStream(app, m.cookie);
    try {
      const conversations: string[] = [];
      for (const from of [freshPhone(), freshPhone()]) {
        const r = await app.inbound({ accountId: acc.id, from, text: 'pedido' });
        expect(r.status).toBe(201);
        conversations.push(r.body.conversationId);
      }
      const handledBy = (type: string | null) =>
        ofKind(sse, 'conversation.updated')
          .filter((e) => (e.data.handling?.type ?? null) === type)
          .map((e) => e.data.id);
      expect((await app.admin('POST', '/jobs/automations/run')).status).toBe(200);
      await until('both handled by the automation', () => conversations.every((c) => handledBy('automation').includes(c)));
      expect((await app.admin('PATCH', `/accounts/${acc.id}/automations/${flow.body.id}`, { status: 'paused' })).status).toBe(200);
      await until('both let go', () => conversations.every((c) => handledBy(null).includes(c)));
      expect(handledBy(null).sort()).toEqual([...conversations].sort());
    } finally {
      sse.close();
    }
  });

  it('"`conversation.updated` (handling…)": an execution that completes lets its conversation go in the statement that ends it, one event', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const flow = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      status: 'active',
      name: 'Saludo',
      trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
      steps: [{ id: 's', type: 'send', text: '¡Hola!' }],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    const sse = await openStream(app, m.cookie);
    try {
      const r = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Hola' });
      expect(r.status).toBe(201);
      const cid: string = r.body.conversationId;
      const mine = () => ofKind(sse, 'conversation.updated').filter((e) => e.data.id === cid);
      expect((await app.admin('POST', '/jobs/automations/run')).status).toBe(200);
      await until('taken, then let go', () => mine().some((e) => e.data.handling === null));
      expect(mine().map((e) => e.data.handling?.type ?? null)).toEqual(['automation', null]);
      const execs = await app.admin('GET', `/accounts/${acc.id}/automations/${flow.body.id}/executions`);
      expect(execs.body.data.map((e: { status: string }) => e.status)).toEqual(['completed']);
      const row = await app.rt.services.db
        .selectFrom('conversations')
        .select('handling_type')
        .where('id', '=', cid)
        .executeTakeFirstOrThrow();
      expect(row.handling_type).toBeNull();
    } finally {
      sse.close();
    }
  });

  it('only committed events: an event whose transaction rolled back never arrives', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const sse = await openStream(app, m.cookie);
    try {
      const db = app.rt.services.db;
      await expect(
        db.transaction().execute(async (trx) => {
          await emitEvent(trx, { accountId: acc.id, kind: 'contact.created', data: { marker: 'rolled back' } }, new Date());
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'después del rollback' });
      await until('the committed one', () => ofKind(sse, 'message.received')[0]);
      expect(sse.events.some((e) => e.data?.marker === 'rolled back')).toBe(false);
    } finally {
      sse.close();
    }
  });

  it('"resumes with `Last-Event-ID` where it can": the events missed while closed, then the live ones', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const first = await openStream(app, m.cookie);
    await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'uno' });
    const seen = await until('uno', () => first.events.find((e) => e.data?.text === 'uno'));
    first.close();
    await until('closed', () => first.ended);
    await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'dos' });
    await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'tres' });
    const again = await openStream(app, m.cookie, { 'last-event-id': seen.id });
    try {
      await until('dos and tres', () => ofKind(again, 'message.received').length >= 2);
      expect(ofKind(again, 'message.received').map((e) => e.data.text)).toEqual(['dos', 'tres']);
      expect(again.events.some((e) => e.id === seen.id)).toBe(false);
      await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'cuatro' });
      await until('cuatro', () => ofKind(again, 'message.received').length >= 3);
      expect(ofKind(again, 'message.received').map((e) => e.data.text)).toEqual(['dos', 'tres', 'cuatro']);
    } finally {
      again.close();
    }
  });

  it('"sends a comment every 15 s" (CONSOLE_KEEPALIVE_MS, 200 ms here)', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const sse = await openStream(app, m.cookie);
    try {
      await until('keep-alive', () => sse.comments.includes('keep-alive'));
      await until('a second keep-alive', () => sse.comments.filter((c) => c === 'keep-alive').length >= 2);
    } finally {
      sse.close();
    }
  });

  it('an event larger than a notification carries (≈ 7.8 KB) arrives whole, in commit order with the small ones around it', async () => {
    const acc = await app.createAccount();
    const m = await memberOf(acc);
    const sse = await openStream(app, m.cookie);
    try {
      const from = freshPhone();
      // 4,000 characters of 2 bytes each: ≈ 8 KB of JSON, read back from the events table.
      const big = 'ñ'.repeat(4_000);
      for (const text of ['antes', big, 'después']) expect((await app.inbound({ accountId: acc.id, from, text })).status).toBe(201);
      await until('three messages', () => ofKind(sse, 'message.received').length >= 3);
      expect(ofKind(sse, 'message.received').map((e) => e.data.text)).toEqual(['antes', big, 'después']);
      const stored = await app.events(acc.id, 'message.received');
      expect(ofKind(sse, 'message.received').map((e) => e.data)).toEqual(stored.map((e) => e.data));
    } finally {
      sse.close();
    }
  });

  it('"holds at most 20 streams per member (the 21st closes the oldest)"; closing frees its listener', async () => {
    const bus = app.rt.services.liveEvents;
    const acc = await app.createAccount();
    const before = bus.listenersOf(acc.id);
    const m = await memberOf(acc);
    const streams: Sse[] = [];
    for (let i = 0; i < 20; i++) streams.push(await openStream(app, m.cookie));
    await until('20 listeners', () => bus.listenersOf(acc.id) === before + 20);
    const last = await openStream(app, m.cookie);
    streams.push(last);
    await until('the first stream closed', () => streams[0]?.ended);
    expect(streams.slice(1).every((s) => !s.ended)).toBe(true);
    await until('still 20 listeners', () => bus.listenersOf(acc.id) === before + 20);
    await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'a todas' });
    await until('all 20 got it', () => streams.slice(1).every((s) => ofKind(s, 'message.received').length === 1));
    for (const s of streams) s.close();
    await until('every listener removed', () => bus.listenersOf(acc.id) === before);
  });
});

describe('"Works across processes (PostgreSQL LISTEN/NOTIFY or Redis pub/sub)"', () => {
  const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);

  it.skipIf(!shared)('an event caused on instance B reaches a stream open on instance A', async () => {
    const b = await startTestApp({ sameDataAs: app, clock: app.clock });
    try {
      const acc = await app.createAccount();
      const m = await memberOf(acc);
      const onA = await openStream(app, m.cookie);
      try {
        const from = freshPhone();
        expect((await b.inbound({ accountId: acc.id, from, text: 'desde B' })).status).toBe(201);
        const got = await until('message.received from B', () => ofKind(onA, 'message.received')[0]);
        expect(got.data).toMatchObject({ text: 'desde B', contact: { phone: from.replace(/\D/g, '') } });
        // A send through B streams message.sent on A.
        const sent = await b.api(acc.key, 'POST', '/messages', { to: from, text: 'respuesta desde B' });
        expect(sent.status).toBe(201);
        const out = await until('message.sent from B', () => ofKind(onA, 'message.sent')[0]);
        expect(out.data.id).toBe(sent.body.id);
      } finally {
        onA.close();
      }
      // "Shutting the server down closes every stream": B closes with a stream open on it.
      const onB = await openStream(b, m.cookie);
      expect(onB.status).toBe(200);
      await b.close();
      await until('the stream on B ended', () => onB.ended);
    } finally {
      await b.close();
    }
  });
});

describe('a stream ends with its session: at once when the session is deleted, at its deadline when it runs out', () => {
  // Keep-alives every 10 minutes here: nothing but the session's end can close these streams.
  let quiet: TestApp;
  beforeAll(async () => {
    quiet = await startTestApp({ env: { CONSOLE_KEEPALIVE_MS: '600000' } });
  });
  afterAll(async () => {
    await quiet?.close();
  });
  const member = async (acc: TestAccount, role = 'agent') => signIn(quiet, await addMember(quiet, acc.id, role));

  it('logout ends the stream at once, with no event or keep-alive to carry it', async () => {
    const acc = await quiet.createAccount();
    const m = await member(acc);
    const other = await member(acc);
    const sse = await openStream(quiet, m.cookie);
    const stays = await openStream(quiet, other.cookie);
    try {
      await until('listening', () => quiet.rt.services.liveEvents.listenersOf(acc.id) >= 2);
      const out = await request(`${quiet.url}/console/api/logout`, 'POST', undefined, { cookie: m.cookie, 'x-chasqui-csrf': m.csrf });
      expect(out.status).toBe(204);
      await until('the stream ended', () => sse.ended);
      // Another member's session is not touched.
      await quiet.inbound({ accountId: acc.id, from: freshPhone(), text: 'sigue' });
      await until('the other stream still gets events', () => ofKind(stays, 'message.received').length === 1);
      expect(stays.ended).toBe(false);
    } finally {
      sse.close();
      stays.close();
    }
  });

  it('disabling a member or removing them ends their streams at once, before any later event', async () => {
    const acc = await quiet.createAccount();
    const owner = await member(acc, 'owner');
    const disabledRow = await addMember(quiet, acc.id, 'agent');
    const removedRow = await addMember(quiet, acc.id, 'agent');
    const disabled = await openStream(quiet, (await signIn(quiet, disabledRow)).cookie);
    const removed = await openStream(quiet, (await signIn(quiet, removedRow)).cookie);
    try {
      await until('listening', () => quiet.rt.services.liveEvents.listenersOf(acc.id) >= 2);
      expect((await owner.call('PATCH', `/accounts/${acc.id}/members/${disabledRow.id}`, { status: 'disabled' })).status).toBe(200);
      expect((await owner.call('DELETE', `/accounts/${acc.id}/members/${removedRow.id}`)).status).toBe(204);
      await quiet.inbound({ accountId: acc.id, from: freshPhone(), text: 'después' });
      await until('both streams ended', () => disabled.ended && removed.ended);
      expect([...disabled.events, ...removed.events].some((e) => e.data?.text === 'después')).toBe(false);
    } finally {
      disabled.close();
      removed.close();
    }
  });

  it('a session past its idle end (12 h) ends its stream at the next event, which it does not get', async () => {
    const acc = await quiet.createAccount();
    const m = await member(acc);
    const sse = await openStream(quiet, m.cookie);
    try {
      await quiet.inbound({ accountId: acc.id, from: freshPhone(), text: 'a tiempo' });
      await until('the first event', () => ofKind(sse, 'message.received').length === 1);
      quiet.clock.advance(12 * 3600_000 + 60_000);
      await quiet.inbound({ accountId: acc.id, from: freshPhone(), text: 'tarde' });
      await until('the stream ended', () => sse.ended);
      expect(sse.events.some((e) => e.data?.text === 'tarde')).toBe(false);
    } finally {
      sse.close();
    }
  });
});
