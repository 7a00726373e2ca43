// POST /contacts with a new phone each request, against the same service code and SQL without HTTP.

import { tmpdir } from 'node:os';
import { loadConfig } from '../../src/config.js';
import { contactView, upsertContact } from '../../src/contacts/service.js';
import { openDatabase } from '../../src/db/index.js';
import { migrate } from '../../src/db/migrate.js';
import { newId } from '../../src/lib/ids.js';
import { emitEvent } from '../../src/webhooks/outbox.js';
import {
  BASE_URL,
  benchAccount,
  CONNECTIONS,
  checkClean,
  DURATION,
  freshDatabase,
  load,
  nextPhone,
  type Server,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

/** The two POST /contacts the send is compared with (issue 30): a plain contact, and one with an attribute. */
export interface ContactFloors {
  /** `{phone, name}`: the plainest write of the API. */
  plain: number;
  /** `{phone, name, attributes: {plan}}`: the figure below. */
  withAttributes: number;
}

/** POST /contacts with a new phone each request, against the same SQL without HTTP. */
export async function contactFigures(server: Server): Promise<ContactFloors> {
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-contacts');
  const http = await load({
    url: `${server.url}/api/v1/contacts`,
    method: 'POST',
    duration: DURATION,
    connections: CONNECTIONS,
    pid: server.proc.pid,
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [
      { setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ phone: nextPhone(1), name: 'Ana', attributes: { plan: 'oro' } }) }) },
    ],
  });
  checkClean('POST /contacts', http);
  // The plainest write, `{phone, name}`: the floor of POST /messages (a send to a new recipient
  // writes no attributes either).
  const plain = await load({
    url: `${server.url}/api/v1/contacts`,
    method: 'POST',
    duration: DURATION,
    connections: CONNECTIONS,
    pid: server.proc.pid,
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ phone: nextPhone(1), name: 'Ana' }) }) }],
  });
  checkClean('POST /contacts {phone, name}', plain);

  // The floor: the same service code (same SQL, same driver) at the same concurrency, no HTTP,
  // on a database of the same kind opened by this process.
  const floorDb = await freshDatabase(BASE_URL, 'benchfloor');
  const database = await openDatabase(loadConfig({ DATABASE_URL: floorDb?.url ?? 'memory://', DATA_DIR: tmpdir() }).database);
  await migrate(database.db);
  const accountId = newId();
  const now = new Date();
  await database.db
    .insertInto('accounts')
    .values({
      id: accountId,
      name: 'floor',
      plan: 'enterprise',
      limits: JSON.stringify(UNLIMITED),
      created_at: now,
      updated_at: now,
    } as any)
    .execute();
  const account = await database.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirstOrThrow();
  let done = 0;
  const end = Date.now() + DURATION * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < end) {
        await database.db.transaction().execute(async (trx) => {
          const r = await upsertContact(
            trx,
            account as any,
            { phone: nextPhone(2).replace(/\D/g, ''), name: 'Ana', attributes: { plan: 'oro' } },
            new Date(),
          );
          if (r.created)
            await emitEvent(
              trx,
              { accountId, kind: 'contact.created', data: { source: 'api', contact: contactView(r.contact) } },
              new Date(),
            );
        });
        done++;
      }
    }),
  );
  const sqlRps = done / DURATION;
  await database.close();
  await floorDb?.drop();
  const ratio = http.rps / sqlRps;
  record({
    figure: 'POST /contacts new contact req/s (row + outbox event)',
    value: http.rps,
    unit: 'req/s',
    floor: 'same SQL, no HTTP',
    floorValue: sqlRps,
    ratio,
    goal: '≥ 0.50',
    pass: ratio >= 0.5,
    note: `p99 ${http.p99} ms; server CPU ${http.cpuUs?.toFixed(0) ?? '?'} µs/req`,
  });
  record({
    figure: 'POST /contacts {phone, name} req/s',
    value: plain.rps,
    unit: 'req/s',
    floor: 'with an attribute, same run',
    floorValue: http.rps,
    ratio: plain.rps / http.rps,
    goal: 'report',
    pass: null,
    note: `p99 ${plain.p99} ms; server CPU ${plain.cpuUs?.toFixed(0) ?? '?'} µs/req`,
  });
  return { plain: plain.rps, withAttributes: http.rps };
}
