// POST /messages (sandbox, an approved template, a new recipient each time) against POST /contacts.
import { admin, benchAccount, CONNECTIONS, checkClean, DURATION, load, must, nextPhone, type Server, UNLIMITED } from '../lib.js';
import { record } from '../report.js';

/** POST /messages (sandbox, approved template, new recipient each time) against POST /contacts. */
export async function messageFigure(server: Server, contactsRps: number) {
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-messages');
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
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (req: any) => ({
          ...req,
          body: JSON.stringify({ to: nextPhone(3), template: { id: t.id, variables: { nombre: 'Ana' } } }),
        }),
      },
    ],
  });
  checkClean('POST /messages', http);
  record({
    figure: 'POST /messages (sandbox template) req/s',
    value: http.rps,
    unit: 'req/s',
    floor: 'POST /contacts',
    floorValue: contactsRps,
    ratio: http.rps / contactsRps,
    goal: 'report',
    pass: null,
    note: `p99 ${http.p99} ms`,
  });
}
