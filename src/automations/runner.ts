// The automation runner: every process runs one. It claims due executions (`run_at <= now`,
// status running) with FOR UPDATE SKIP LOCKED, moving `run_at` to the end of a lease and writing
// its claim, and runs each until it waits, ends or the process stops (steps.ts). Woken in-process
// when an execution is started or given input; polls for the rest (timers, other processes'
// work, claims of a crashed process whose lease lapsed).
import { sql } from 'kysely';
import type { Agent } from 'undici';
import type { AccountRow, AutomationRow, ContactRow, ExecutionRow } from '../db/types.js';
import { newId } from '../lib/ids.js';
import type { AutomationWorker, Services } from '../services.js';
import { createAgent } from '../webhooks/send.js';
import { advance, type Claimed, LEASE_MS } from './steps.js';

export const POLL_MS = 250;
/** Executions run at once in this process (each one step at a time). */
const MAX_IN_FLIGHT = 64;
/** http steps: connections per origin (a slow receiver holds a few, not all). */
const HTTP_PER_ORIGIN = 16;
const HTTP_MAX_TIMEOUT_MS = 15_000;

export class AutomationRunner implements AutomationWorker {
  private readonly agent: Agent;
  private started = false;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  /** Executions this process is running, by id. */
  private readonly inFlight = new Map<string, Promise<number>>();

  constructor(private readonly s: Services) {
    this.agent = createAgent({
      allowPrivate: s.config.allowPrivateWebhooks,
      connectionsPerOrigin: HTTP_PER_ORIGIN,
      timeoutMs: HTTP_MAX_TIMEOUT_MS,
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.timer = setInterval(() => this.pump(), POLL_MS);
    this.timer.unref();
    this.pump();
  }

  wake(): void {
    if (this.started && !this.stopping) this.pump();
  }

  /** Stops claiming; executions in flight finish their step and give themselves back (due now). */
  async stop(graceMs = 20_000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pumping;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), new Promise((r) => (t = setTimeout(r, graceMs)))]);
    clearTimeout(t);
    await this.agent.close().catch(() => {});
  }

  /**
   * Runs everything due now (by the service's clock) until nothing is due, including what the
   * background already holds; returns the transitions made (POST /admin/v1/jobs/automations/run).
   */
  async runOnce(): Promise<number> {
    let n = 0;
    for (;;) {
      // A background claim in progress holds rows that are not in flight yet: wait for it, or
      // this pass would find them neither due nor in flight and answer before they ran.
      if (this.pumping) await this.pumping;
      n += (await Promise.all([...this.inFlight.values()])).reduce((a, b) => a + b, 0);
      const claimed = await this.claim(MAX_IN_FLIGHT);
      if (claimed.length === 0 && this.inFlight.size === 0 && !this.pumping) return n;
      n += (await Promise.all(claimed.map((row) => this.run(row)))).reduce((a, b) => a + b, 0);
    }
  }

  /**
   * Runs one execution now if it is due and free, and waits for it to rest (a wait, an answer, its
   * end) or for `maxMs`, whichever comes first (a start through the API answers with short flows
   * already ended).
   */
  async drive(executionId: string, maxMs: number): Promise<void> {
    let running = this.inFlight.get(executionId);
    if (!running) {
      const [row] = await this.claim(1, executionId);
      // Not claimed: this process's poll may have taken it meanwhile.
      running = row ? this.run(row) : this.inFlight.get(executionId);
    }
    let t: NodeJS.Timeout | undefined;
    const late = new Promise((r) => (t = setTimeout(r, maxMs)));
    // This process's poll may hold it in a claim that has not reached inFlight yet (SKIP LOCKED hid
    // it from ours): let that claim land, as runOnce does.
    if (!running && this.pumping) {
      await Promise.race([this.pumping, late]);
      running = this.inFlight.get(executionId);
    }
    if (running) await Promise.race([running, late]);
    clearTimeout(t);
  }

  private pump(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = (async () => {
      do {
        this.again = false;
        for (;;) {
          const room = MAX_IN_FLIGHT - this.inFlight.size;
          if (room <= 0 || this.stopping) break;
          const claimed = await this.claim(room);
          for (const row of claimed) void this.run(row);
          if (claimed.length < room) break;
          // Full: wait for a slot before claiming more.
          await Promise.race(this.inFlight.values());
        }
      } while (this.again && !this.stopping);
    })()
      .catch((err) => this.s.log.warn({ err: { message: (err as Error).message } }, 'automation runner: claim failed'))
      .finally(() => {
        this.pumping = null;
      });
  }

  private run(claimed: Claimed): Promise<number> {
    const id = claimed.row.id;
    const p = advance(this.s, this.agent, claimed, () => this.stopping).finally(() => {
      this.inFlight.delete(id);
      // A slot freed: more may be due.
      if (this.started && !this.stopping) this.pump();
    });
    this.inFlight.set(id, p);
    return p;
  }

  /**
   * Claims up to `limit` due executions (or the one named); their `run_at` becomes the lease's end.
   * One statement returns each with its automation, contact and account (what a run reads first).
   */
  private async claim(limit: number, id?: string): Promise<Claimed[]> {
    if (limit <= 0) return [];
    const now = this.s.clock.now();
    const lease = new Date(now.getTime() + LEASE_MS);
    const claim = newId();
    const only = id ? sql`AND id = ${id}` : sql``;
    const r = await sql<ExecutionRow & { automation: Json; contact: Json; account: Json }>`
      WITH c AS (
        UPDATE automation_executions e SET claim = ${claim}, run_at = ${lease}, updated_at = ${now}
        WHERE e.id IN (
          SELECT id FROM automation_executions
          WHERE status = 'running' AND run_at <= ${now} ${only}
          ORDER BY run_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING e.*)
      SELECT c.*, to_jsonb(a) AS automation, to_jsonb(ct) AS contact, to_jsonb(acc) AS account
      FROM c
      JOIN automations a ON a.id = c.automation_id
      JOIN contacts ct ON ct.id = c.contact_id
      JOIN accounts acc ON acc.id = c.account_id`.execute(this.s.db);
    return r.rows.map(({ automation, contact, account, ...row }) => ({
      row,
      automation: withDates(automation, ['created_at', 'updated_at', 'deleted_at']) as AutomationRow,
      contact: withDates(contact, ['created_at', 'updated_at']) as ContactRow,
      account: withDates(account, ['created_at', 'updated_at']) as AccountRow,
    }));
  }
}

type Json = Record<string, unknown>;

/** Rows read as JSON carry timestamps as text: back to Date, as the drivers give them. */
function withDates(o: Json, keys: string[]): Json {
  for (const k of keys) if (typeof o[k] === 'string') o[k] = new Date(o[k] as string);
  return o;
}
