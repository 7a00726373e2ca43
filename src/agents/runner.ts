// The agent runner: every process runs one (a ClaimLoop, jobs/claim-loop.ts). It claims due
// stretches (`run_at <= now`, status running: a message to answer, or the idle check) with FOR
// UPDATE SKIP LOCKED, moving `run_at` to the end of a lease, writing its claim and clearing
// `pending` (a message that commits while the claim is held sets it again), so one
// conversation has one turn at a time across processes; turns.ts runs each. Woken in-process when
// a stretch starts or gets a message; polls for the rest.
import { sql } from 'kysely';
import { type JsonRow, withDates } from '../db/json-row.js';
import type { AccountRow, AgentRow, ContactRow, StretchRow, TurnRow } from '../db/types.js';
import { ClaimLoop } from '../jobs/claim-loop.js';
import { newId } from '../lib/ids.js';
import type { AgentWorker, Services } from '../services.js';
import { type ClaimedStretch, leaseMs, runStretch } from './turns.js';

const POLL_MS = 250;
/** Stretches run at once in this process (each one turn at a time). */
const MAX_IN_FLIGHT = 64;

export class AgentRunner implements AgentWorker {
  private readonly loop: ClaimLoop<ClaimedStretch>;

  constructor(private readonly s: Services) {
    this.loop = new ClaimLoop({
      name: 'agent runner',
      pollMs: POLL_MS,
      maxInFlight: MAX_IN_FLIGHT,
      claim: (limit, id) => this.claim(limit, id),
      idOf: (c) => c.row.id,
      run: (c, stopping) => runStretch(this.s, c, stopping),
      log: s.log,
    });
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  stop(graceMs = 20_000): Promise<void> {
    return this.loop.stop(graceMs);
  }

  /** Runs every turn due now until none is; returns the steps taken (POST /admin/v1/jobs/agents/run). */
  runOnce(): Promise<number> {
    return this.loop.runOnce();
  }

  /**
   * Claims up to `limit` due stretches (or the one named); their `run_at` becomes the lease's end.
   * One statement returns each with its agent, contact, account and unfinished turn.
   */
  private async claim(limit: number, id?: string): Promise<ClaimedStretch[]> {
    if (limit <= 0) return [];
    const now = this.s.clock.now();
    const lease = new Date(now.getTime() + leaseMs(this.s));
    const claim = newId();
    const only = id ? sql`AND id = ${id}` : sql``;
    const r = await sql<StretchRow & { agent: JsonRow; contact: JsonRow; account: JsonRow; turn: JsonRow | null }>`
      WITH c AS (
        UPDATE agent_stretches st SET claim = ${claim}, run_at = ${lease}, pending = false, tries = st.tries + 1, updated_at = ${now}
        WHERE st.id IN (
          SELECT id FROM agent_stretches
          WHERE status = 'running' AND run_at <= ${now} ${only}
          ORDER BY run_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING st.*)
      SELECT c.*, to_jsonb(a) AS agent, to_jsonb(ct) AS contact, to_jsonb(acc) AS account,
        (SELECT to_jsonb(t) FROM agent_turns t WHERE t.stretch_id = c.id AND t.status <> 'done' ORDER BY t.n DESC LIMIT 1) AS turn
      FROM c
      JOIN agents a ON a.id = c.agent_id
      JOIN contacts ct ON ct.id = c.contact_id
      JOIN accounts acc ON acc.id = c.account_id`.execute(this.s.db);
    return r.rows.map(({ agent, contact, account, turn, ...row }) => ({
      row: withDates<StretchRow>(row, []),
      agent: withDates<AgentRow>(agent, ['created_at', 'updated_at', 'deleted_at']),
      contact: withDates<ContactRow>(contact, ['created_at', 'updated_at']),
      account: withDates<AccountRow>(account, ['created_at', 'updated_at']),
      turn: turn ? withDates<TurnRow>(turn, ['started_at', 'ended_at']) : null,
    }));
  }
}
