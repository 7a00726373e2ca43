// Resident memory of the server holding 1,000 open keep-alive connections.
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { type Server, sleep } from '../lib.js';
import { record } from '../report.js';

/** RSS of the server holding 1,000 open keep-alive connections. */
export async function rssFigure(server: Server) {
  const before = server.rssMb();
  const agent = new Agent({ keepAlive: true, maxSockets: 1000, maxFreeSockets: 1000 });
  const url = new URL(`${server.url}/healthz`);
  await Promise.all(
    Array.from(
      { length: 1000 },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, agent }, (res: IncomingMessage) => {
            res.resume();
            res.on('end', () => resolve());
          });
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  await sleep(500);
  const sockets = Object.values(agent.freeSockets).reduce((n, s) => n + (s?.length ?? 0), 0);
  const rss = server.rssMb();
  agent.destroy();
  record({
    figure: `RSS with ${sockets} open keep-alive connections`,
    value: rss,
    unit: 'MB',
    floor: 'idle server',
    floorValue: before,
    ratio: null,
    goal: '≤ 200',
    pass: rss <= 200,
  });
}
