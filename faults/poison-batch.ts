// A poison batch on the WhatsApp Cloud receiver (docs/operating.md "Dead letters: nothing held
// forever, nothing dropped in silence"): a real built server on PostgreSQL + Redis with
// QUEUE_RETRY_SCHEDULE in seconds. One batch fails on every try for our own reason (a trigger on the
// server's database raises for one message text, as a bug of ours would), among batches of 200
// customers, some of them in the poison batch, and batches whose statuses carry the out-of-range
// error codes 99999999999 and "4294967296". Past the schedule the poison batch must be exactly one
// dead letter, no customer held behind it, every other acknowledged message stored once; after the
// trigger is removed, POST /admin/v1/dead-letters/{id}/retry stores its message once.
import { createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { admin, benchAccount, connectCloudNumber, must, nextPhone, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';

const CUSTOMERS = 200;
const PER_BATCH = 10;
/** Batches before the poison one, and after it (the later ones carry its customers' next messages). */
const BEFORE = 20;
const AFTER = 80;
const POISON_TEXT = 'Mensaje que nuestro código no puede guardar';
/** The poison batch's customers: the poisoned one and nine who write again later. */
const SHARING = PER_BATCH;

export const POISON_SCHEDULE = '1,1,1';

interface Msg {
  from: string;
  id: string;
  text: string;
}

export async function poisonBatch(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  const server: Server = await startServer(env);
  try {
    await client.connect();
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-poison');
    const { number, cloud } = await connectCloudNumber(server.url, acc.id, nextPhone(8));
    const customers = Array.from({ length: CUSTOMERS }, (_, i) => `5491181${String(100_000 + i).padStart(6, '0')}`);
    await client.query(`CREATE FUNCTION faults_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.text = '${POISON_TEXT}' THEN RAISE EXCEPTION 'poisoned row (faults)'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER faults_poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION faults_poison();`);

    let seq = 0;
    const msg = (from: string, text?: string): Msg => {
      seq++;
      return { from, id: `wamid.poison${seq.toString(36)}${randomBytes(4).toString('hex')}`, text: text ?? `Mensaje ${seq}` };
    };
    const post = async (messages: Msg[], statuses: unknown[] = []): Promise<boolean> => {
      const ts = String(Math.floor(Date.now() / 1000));
      const value: Record<string, unknown> = {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: number.phone, phone_number_id: cloud.phoneNumberId },
        messages: messages.map((m) => ({ from: m.from, id: m.id, timestamp: ts, type: 'text', text: { body: m.text } })),
      };
      if (statuses.length > 0) value.statuses = statuses;
      const raw = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [{ id: cloud.wabaId, changes: [{ field: 'messages', value }] }],
      });
      const res = await fetch(`${server.url}/channels/whatsapp/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-hub-signature-256': `sha256=${createHmac('sha256', cloud.appSecret).update(raw).digest('hex')}`,
        },
        body: raw,
      });
      await res.arrayBuffer();
      return res.status === 200;
    };
    /** Ten distinct customers, round robin: every customer writes in several batches. */
    let next = 0;
    const someCustomers = () => Array.from({ length: PER_BATCH }, () => customers[next++ % CUSTOMERS]!);

    const acknowledged: Msg[] = [];
    let batches = 0;
    let refused = 0;
    const send = async (messages: Msg[], statuses: unknown[] = []) => {
      if (await post(messages, statuses)) {
        acknowledged.push(...messages);
        batches++;
      } else refused++;
    };
    for (let i = 0; i < BEFORE; i++) await send(someCustomers().map((c) => msg(c)));
    // The poison batch: its first customer's message fails on every try; the others' are fine.
    const sharing = customers.slice(CUSTOMERS - SHARING);
    const poison = msg(sharing[0]!, POISON_TEXT);
    await send([poison, ...sharing.slice(1).map((c) => msg(c))]);
    const poisonedAt = Date.now();
    // Meta's JSON out of range: status error codes the integer column cannot keep (skipped, logged).
    const unknown = (code: unknown) => ({
      id: `wamid.unknown${randomBytes(6).toString('hex')}`,
      status: 'failed',
      timestamp: String(Math.floor(Date.now() / 1000)),
      recipient_id: customers[0],
      errors: [{ code, title: 'fuera de rango' }],
    });
    await send([msg(customers[1]!)], [unknown(99999999999)]);
    await send([msg(customers[2]!)], [unknown('4294967296')]);
    // Later batches: the poison batch's customers write again, among everyone else.
    for (let i = 0; i < AFTER; i++) {
      const from = someCustomers();
      if (i % 8 === 0) from.splice(0, 2, sharing[(i / 8) % SHARING]!, sharing[(i / 8 + 1) % SHARING]!);
      await send([...new Set(from)].map((c) => msg(c)));
    }

    // Past the schedule: everything else processed, the poison batch parked.
    const scheduleS = POISON_SCHEDULE.split(',').reduce((a, b) => a + Number(b), 0);
    const deadline = Date.now() + (scheduleS + 60) * 1000;
    let queued = -1;
    let deadLetters: { id: string; queue: string; attempts: number; firstFailedAt: string; diedAt: string }[] = [];
    while (Date.now() < deadline) {
      queued = (await client.query(`SELECT count(*)::int AS n FROM inbound_queue WHERE dead_at IS NULL`)).rows[0].n;
      deadLetters = (await admin(server.url, 'GET', '/dead-letters')).body.data;
      if (queued === 0 && deadLetters.length > 0) break;
      await sleep(200);
    }
    const deadSeenAfterS = (Date.now() - poisonedAt) / 1000;

    const countStored = async () => {
      const r = await client.query(`SELECT wamid, count(*)::int AS n FROM messages WHERE account_id = $1 GROUP BY wamid`, [acc.id]);
      return new Map<string, number>(r.rows.map((x) => [x.wamid as string, x.n as number]));
    };
    const stored = await countStored();
    const others = acknowledged.filter((m) => m.id !== poison.id);
    const lost = others.filter((m) => !stored.has(m.id)).length;
    const twice = [...stored.values()].filter((n) => n > 1).length;
    const held = new Set(others.filter((m) => !stored.has(m.id)).map((m) => m.from)).size;
    const [dead] = deadLetters;
    const deathAfterS = dead ? (Date.parse(dead.diedAt) - Date.parse(dead.firstFailedAt)) / 1000 : Number.NaN;
    const poisonStoredBefore = stored.get(poison.id) ?? 0;

    // The operator fixes the cause and retries: the poison message is stored once.
    await client.query(`DROP TRIGGER faults_poison ON messages; DROP FUNCTION faults_poison();`);
    let retried = false;
    let poisonStored = 0;
    if (dead) {
      await must(admin(server.url, 'POST', `/dead-letters/${dead.id}/retry`), 200, 'retry the dead letter');
      retried = true;
      const until = Date.now() + 30_000;
      while (Date.now() < until) {
        poisonStored = (await countStored()).get(poison.id) ?? 0;
        const left = (await client.query(`SELECT count(*)::int AS n FROM inbound_queue`)).rows[0].n;
        if (poisonStored > 0 && left === 0) break;
        await sleep(200);
      }
    }
    const after = await countStored();
    const twiceAfter = [...after.values()].filter((n) => n > 1).length;
    const events = await client.query(
      `SELECT data->>'wamid' AS wamid, count(*)::int AS n FROM events WHERE account_id = $1 AND kind = 'message.received' GROUP BY 1`,
      [acc.id],
    );
    const eventCount = new Map<string, number>(events.rows.map((r) => [r.wamid as string, r.n as number]));
    const withoutOneEvent = acknowledged.filter((m) => eventCount.get(m.id) !== 1).length;
    const leftDead = (await admin(server.url, 'GET', '/dead-letters')).body.data.length;

    const ok =
      refused === 0 &&
      queued === 0 &&
      deadLetters.length === 1 &&
      dead?.queue === 'inbound' &&
      dead.attempts === POISON_SCHEDULE.split(',').length + 1 &&
      held === 0 &&
      lost === 0 &&
      twice === 0 &&
      poisonStoredBefore === 0 &&
      retried &&
      poisonStored === 1 &&
      twiceAfter === 0 &&
      withoutOneEvent === 0 &&
      leftDead === 0;
    const line =
      `poison batch (QUEUE_RETRY_SCHEDULE=${POISON_SCHEDULE} s): ${CUSTOMERS} customers, ${batches} batches acknowledged (${acknowledged.length} messages, ${refused} refused), ` +
      `${SHARING - 1} customers sharing the poison batch, 2 batches with status codes 99999999999 and "4294967296"; ` +
      `${deadLetters.length} dead letter${deadLetters.length === 1 ? '' : 's'} (${dead?.queue ?? '-'}, ${dead?.attempts ?? '-'} tries, ${deathAfterS.toFixed(1)} s from its first failure to its death, ${(deathAfterS - scheduleS).toFixed(1)} s after the schedule's last delay; the queue drained and the dead letter listed ${deadSeenAfterS.toFixed(1)} s after its POST, ${AFTER + 2} batches posted after it), ` +
      `${held} customers held, ${lost} other acknowledged messages lost, ${twice} stored twice; ` +
      `after the fix and the retry the poison message stored ${poisonStored}×, ${twiceAfter} stored twice, ${withoutOneEvent} without exactly one message.received, ${leftDead} dead letters left`;
    return { ok, line };
  } finally {
    await server.stop().catch(() => {});
    await client.end().catch(() => {});
  }
}
