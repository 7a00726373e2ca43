// The automation runner: every process runs one (a ClaimLoop, jobs/claim-loop.ts). It claims due
// executions (`run_at <= now`, status running) with FOR UPDATE SKIP LOCKED, moving `run_at` to the
// end of a lease and writing its claim, and runs each until it waits, ends or the process stops
// (steps.ts). Woken in-process when an execution is started or given input; polls for the rest.
import { sql } from 'kysely';
import type { Agent } from 'undici';
import { type JsonRow, withDates } from '../db/json-row.js';
import type { AccountRow, AutomationRow, ContactRow, ExecutionRow } from '../db/types.js';
import { ClaimLoop } from '../jobs/claim-loop.js';
import { newId } from '../lib/ids.js';
import type { AutomationWorker, Services } from '../services.js';
import { createAgent } from '../webhooks/send.js';
import { LEASE_MS } from './step-writes.js';
import { advance, type Claimed } from './steps.js';

export const POLL_MS = 250;
/** Executions run at once in this process (each one step at a time). */
const MAX_IN_FLIGHT = 64;
/** http steps: connections per origin (a slow receiver holds a few, not all). */
const HTTP_PER_ORIGIN = 16;
const HTTP_MAX_TIMEOUT_MS = 15_000;

export class AutomationRunner implements AutomationWorker {
  private readonly agent: Agent;
  private readonly loop: ClaimLoop<Claimed>;

  constructor(private readonly s: Services) {
    this.agent = createAgent({
      allowPrivate: s.config.allowPrivateWebhooks,
      connectionsPerOrigin: HTTP_PER_ORIGIN,
      timeoutMs: HTTP_MAX_TIMEOUT_MS,
    });
    this.loop = new ClaimLoop({
      name: 'automation runner',
      pollMs: POLL_MS,
      maxInFlight: MAX_IN_FLIGHT,
      claim: (limit, id) => this.claim(limit, id),
      idOf: (c) => c.row.id,
      run: (c, stopping) => advance(this.s, this.agent, c, stopping),
      log: s.log,
    });
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  /** Stops claiming; executions in flight finish their step and give themselves back (due now). */
  async stop(graceMs = 20_000): Promise<void> {
    await this.loop.stop(graceMs);
    await this.agent.close().catch(() => {});
  }

  /** Runs everything due now until nothing is; returns the transitions made. */
  runOnce(): Promise<number> {
    return this.loop.runOnce();
  }

  /** Runs one execution now if due and free; waits until it rests or `maxMs` passes. */
  drive(executionId: string, maxMs: number): Promise<void> {
    return this.loop.drive(executionId, maxMs);
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
    const r = await sql<ExecutionRow & { automation: JsonRow; contact: JsonRow; account: JsonRow }>`
      WITH c AS (
        UPDATE automation_executions e SET claim = ${claim}, run_at = ${lease}, tries = e.tries + 1, updated_at = ${now}
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
      automation: withDates<AutomationRow>(automation, ['created_at', 'updated_at', 'deleted_at']),
      contact: withDates<ContactRow>(contact, ['created_at', 'updated_at']),
      account: withDates<AccountRow>(account, ['created_at', 'updated_at']),
    }));
  }
}
