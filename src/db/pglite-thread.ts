// The embedded database (PGlite) on a thread of its own (pglite-worker.mjs; docs/architecture.md
// "The embedded database runs on its own thread"). PGlite runs each statement synchronously: on
// the server's thread a batch of an import held every request until it ended. This side keeps
// PGlite's calls the server uses — query, exec, a transaction, listen, dumpDataDir, close — and
// sends each to the thread as one message.
//
// One connection, as PGlite is: a transaction is open on the thread between begin() and end(), and
// every query meanwhile runs in it. The caller makes sure nothing else reaches the connection
// then: the Kysely dialect holds its mutex from acquire to release (pglite-dialect.ts), and
// `transaction` below is for a caller that is alone (db move).
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

export interface Rows<R> {
  rows: R[];
  affectedRows?: number;
}

/** What runs inside `transaction`. */
export interface EmbeddedTx {
  query<R>(sql: string, params?: unknown[]): Promise<Rows<R>>;
  exec(sql: string): Promise<Rows<unknown>>;
}

interface Waiting {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/** A database error rebuilt on this side: its message and fields (`code`, `constraint`…), as PGlite threw it. */
function rebuilt(e: Record<string, unknown>): Error {
  const err = new Error(String(e.message));
  Object.assign(err, e);
  return err;
}

/** The worker's file: compiled next to this one (dist), or the source itself (tests run from src). */
function workerFile(): URL {
  return new URL('./pglite-worker.mjs', import.meta.url);
}

export class EmbeddedDatabase implements EmbeddedTx {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiting>();
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private next = 1;
  private ended: Error | null = null;

  private constructor(worker: Worker) {
    this.worker = worker;
    // Idle, the thread does not keep the process alive (PGlite on the main thread did not either);
    // a call waiting for its answer does (see call()).
    worker.unref();
    worker.on('message', (m: { id?: number; result?: unknown; error?: Record<string, unknown>; notify?: string; payload?: string }) => {
      if (m.notify !== undefined) {
        for (const f of this.listeners.get(m.notify) ?? []) f(m.payload ?? '');
        return;
      }
      const w = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id!);
      if (this.waiting.size === 0) worker.unref();
      if (m.error) w.reject(rebuilt(m.error));
      else w.resolve(m.result);
    });
    const fail = (err: Error) => {
      this.ended ??= err;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the embedded database's thread ended (exit code ${code})`)));
  }

  /** Starts the thread and opens PGlite there: on disk in `dataDir`, else in memory, from `load` when given. */
  static async open(opts: { dataDir?: string; loadDataDir?: Blob }): Promise<EmbeddedDatabase> {
    const file = workerFile();
    if (!existsSync(file)) throw new Error(`missing ${file.pathname}: run npm run build`);
    const load = opts.loadDataDir ? new Uint8Array(await opts.loadDataDir.arrayBuffer()) : undefined;
    const worker = new Worker(file, {
      workerData: { dataDir: opts.dataDir, load },
      transferList: load ? [load.buffer] : [],
      // The server's own flags (a --require of a bench probe, --cpu-prof) are not the thread's.
      execArgv: [],
    });
    const ready = await new Promise<{ ready: boolean; error?: Record<string, unknown> }>((resolve, reject) => {
      const first = (m: { ready?: boolean; error?: Record<string, unknown> }) => {
        if (m.ready === undefined) return;
        worker.off('message', first);
        resolve(m as { ready: boolean });
      };
      worker.on('message', first);
      worker.once('error', reject);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw rebuilt(ready.error ?? { message: 'PGlite did not open' });
    }
    return new EmbeddedDatabase(worker);
  }

  get closed(): boolean {
    return this.ended !== null;
  }

  private call<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    if (this.ended) return Promise.reject(this.ended);
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, op, ...args });
    });
  }

  query<R>(sql: string, params: unknown[] = []): Promise<Rows<R>> {
    return this.call('query', { sql, params });
  }

  /** Raw text that may hold several statements (migrations): the last statement's rows. */
  exec(sql: string): Promise<Rows<unknown>> {
    return this.call('exec', { sql });
  }

  /** Opens the connection's transaction: every query until end() runs in it. */
  begin(): Promise<void> {
    return this.call('begin');
  }

  /** Commits (or rolls back) the transaction begin() opened. */
  end(commit: boolean): Promise<void> {
    return this.call('end', { commit });
  }

  /** `fn` in one transaction, for a caller alone on the connection (db move); rolled back if it throws. */
  async transaction<T>(fn: (tx: EmbeddedTx) => Promise<T>): Promise<T> {
    await this.begin();
    let result: T;
    try {
      result = await fn(this);
    } catch (err) {
      await this.end(false);
      throw err;
    }
    await this.end(true);
    return result;
  }

  /** LISTEN on `channel`; returns what stops this listener. */
  async listen(channel: string, f: (payload: string) => void): Promise<() => Promise<void>> {
    const set = this.listeners.get(channel) ?? new Set();
    this.listeners.set(channel, set);
    set.add(f);
    await this.call('listen', { channel });
    return async () => {
      set.delete(f);
      if (set.size > 0 || this.ended) return;
      this.listeners.delete(channel);
      await this.call('unlisten', { channel });
    };
  }

  /** The data directory as one tar (tests start from a migrated template; a backup's raw bytes). */
  async dumpDataDir(compression: 'none' | 'gzip' | 'auto' = 'none'): Promise<Blob> {
    const bytes = await this.call<Uint8Array>('dump', { compression });
    return new Blob([bytes]);
  }

  /** Closes PGlite (its files flushed) and ends the thread. */
  async close(): Promise<void> {
    if (this.ended) return;
    try {
      await this.call('close');
    } finally {
      this.ended = new Error('the embedded database is closed');
      await this.worker.terminate();
    }
  }
}
