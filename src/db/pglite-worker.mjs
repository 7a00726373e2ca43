// The embedded database's own thread (docs/architecture.md "The embedded database runs on its own
// thread"): PGlite runs every statement synchronously in WebAssembly, so on the server's thread a
// 10 ms statement (a batch of an import) held every request for 10 ms. Here it holds only this
// thread. The server talks to it through pglite-thread.ts, one message per call; calls arrive one
// at a time for the connection (the dialect's mutex), so the open transaction is the only one.
//
// Plain JavaScript, not TypeScript: Node starts a worker from a file as it is, the same file from
// the sources (tests) and from dist (tsc copies it, allowJs).
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/** The transaction open now (begin → end), and how to end it. */
let tx = null;
let finish = null;
let done = null;
class RollbackSignal extends Error {}

const options = {
  ...(workerData.dataDir ? { dataDir: workerData.dataDir } : {}),
  ...(workerData.load ? { loadDataDir: new Blob([workerData.load]) } : {}),
  // int8 (counts, sums) as JS numbers: every count we keep fits in 2^53.
  parsers: { 20: (v) => Number(v) },
};
const opened = PGlite.create(options);
const listeners = new Map();

/** A database error as data: its message and every field the server reads (code, constraint…). */
function plain(err) {
  if (!(err instanceof Error)) return { message: String(err) };
  const fields = {};
  for (const [k, v] of Object.entries(err)) if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) fields[k] = v;
  return { ...fields, name: err.name, message: err.message };
}

const ops = {
  async query(pg, { sql, params }) {
    const res = await (tx ?? pg).query(sql, params);
    return { rows: res.rows, affectedRows: res.affectedRows };
  },
  /** Raw text that may hold several statements (migrations): the last one's rows. */
  async exec(pg, { sql }) {
    const all = await (tx ?? pg).exec(sql);
    return { rows: all.length > 0 ? all[all.length - 1].rows : [] };
  },
  begin(pg) {
    return new Promise((started, failed) => {
      done = pg
        .transaction(
          (t) =>
            new Promise((resolve, reject) => {
              tx = t;
              finish = (commit) => (commit ? resolve() : reject(new RollbackSignal()));
              started();
            }),
        )
        .catch((e) => {
          if (!(e instanceof RollbackSignal)) {
            if (tx === null) failed(e);
            throw e;
          }
        });
    });
  },
  async end(_pg, { commit }) {
    const f = finish;
    const d = done;
    finish = null;
    done = null;
    f?.(commit);
    try {
      await d;
    } finally {
      tx = null;
    }
  },
  async listen(pg, { channel }) {
    if (listeners.has(channel)) return;
    listeners.set(channel, await pg.listen(channel, (payload) => parentPort.postMessage({ notify: channel, payload })));
  },
  async unlisten(_pg, { channel }) {
    const stop = listeners.get(channel);
    listeners.delete(channel);
    await stop?.();
  },
  async dump(pg, { compression }) {
    const file = await pg.dumpDataDir(compression);
    return new Uint8Array(await file.arrayBuffer());
  },
  async close(pg) {
    if (!pg.closed) await pg.close();
  },
};

parentPort.on('message', async (m) => {
  try {
    const pg = await opened;
    const result = await ops[m.op](pg, m);
    const transfer = result instanceof Uint8Array ? [result.buffer] : [];
    parentPort.postMessage({ id: m.id, result }, transfer);
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: plain(err) });
  }
});

opened.then(
  () => parentPort.postMessage({ ready: true }),
  (err) => parentPort.postMessage({ ready: false, error: plain(err) }),
);
