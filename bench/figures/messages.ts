// POST /messages (sandbox, an approved template, a new recipient each time, from 4 numbers of the
// account in turn, as high-volume senders do) against POST /contacts {phone, name} (and, reported,
// against a contact with an attribute).
import { admin, benchAccount, CONNECTIONS, checkClean, DURATION, load, must, nextPhone, type Server, UNLIMITED } from '../lib.js';
import { record } from '../report.js';
import type { ContactFloors } from './contacts.js';

/** Numbers the figure sends from, in turn: each number's throughput tier caps its own sends per second. */
const NUMBERS = 4;

/** POST /messages (sandbox, approved template, new recipient each time) against POST /contacts {phone, name}. */
export async function messageFigure(server: Server, floors: ContactFloors) {
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-messages');
  const numbers = [acc.phoneNumberId];
  for (let i = 1; i < NUMBERS; i++) {
    const pn = await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/phone-numbers`, {
        phone: `+54 9 11 4000-000${i}`,
        name: `Bench ${i}`,
        provider: 'sandbox',
      }),
      201,
      'create number',
    );
    await must(admin(server.url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${pn.id}`, { throughputPerSecond: 1000 }), 200, 'number tier');
    numbers.push(pn.id as string);
  }
  let turn = 0;
  const t = await must(
    admin(server.url, 'POST', `/accounts/${acc.id}/templates`, {
      name: 'bench_pedido',
      category: 'UTILITY',
      body: 'Hola {{nombre}}, tu pedido está en camino.',
      variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
      status: 'APPROVED',
    }),
    201,
    'create template',
  );
  const http = await load({
    url: `${server.url}/api/v1/messages`,
    method: 'POST',
    duration: DURATION,
    connections: CONNECTIONS,
    pid: server.proc.pid,
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (req: any) => ({
          ...req,
          body: JSON.stringify({
            to: nextPhone(3),
            phoneNumberId: numbers[turn++ % NUMBERS],
            template: { id: t.id, variables: { nombre: 'Ana' } },
          }),
        }),
      },
    ],
  });
  checkClean('POST /messages', http);
  const ratio = http.rps / floors.plain;
  record({
    figure: `POST /messages (sandbox template, ${NUMBERS} numbers) req/s`,
    value: http.rps,
    unit: 'req/s',
    floor: 'POST /contacts {phone, name}',
    floorValue: floors.plain,
    ratio,
    goal: '≥ 0.90',
    // Without the contacts figure in the run (BENCH_ONLY=messages) there is no floor to compare.
    pass: Number.isNaN(ratio) ? null : ratio >= 0.9,
    note: `p99 ${http.p99} ms; server CPU ${http.cpuUs?.toFixed(0) ?? '?'} µs/req; ${(http.rps / floors.withAttributes).toFixed(2)} of POST /contacts with an attribute`,
  });
}
