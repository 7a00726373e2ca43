// The writes of a running execution (docs/automations.md "Durability"): the claim's context, the
// one checked update of the execution row, the step log, the month's step count (quota), the
// transaction a step commits in, and releasing the claim. Every change of an execution is one
// transaction that checks the claim (`WHERE id AND claim AND status='running'`): a runner whose
// execution was cancelled, or whose claim lapsed and was taken, writes nothing (Lost).
//
// Row locks, in the order of docs/architecture.md: the step's contact / conversation / case, then
// the execution row, then the month's automation counter, then events.
import { type RawBuilder, sql, type Updateable } from 'kysely';
import type { Agent } from 'undici';
import type { ComposedWrite } from '../conversations/service.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, AutomationExecutionsTable, AutomationRow, ContactRow, ExecutionRow } from '../db/types.js';
import { ApiError, ValidationError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { quotaPeriod } from '../limits/period.js';
import { effectiveLimits } from '../limits/plans.js';
import { type AutomationResource, addAutomationUsage } from '../limits/usage.js';
import type { Services } from '../services.js';
import { queuedDeliveries } from '../webhooks/outbox.js';
import type { Step } from './flow.js';
import type { TextContext as RenderContext } from './text.js';

/** How long a claim holds an execution: longer than any one step (an http step is ≤ 15 s). */
export const LEASE_MS = 120_000;

/** The claim was lost (cancelled, or lapsed and taken): stop without writing. */
export class Lost extends Error {}
/** The month's quota is used up: the step did not run. */
export class QuotaExceeded extends Error {
  constructor(
    readonly resource: AutomationResource,
    readonly limit: number,
  ) {
    super(resource);
  }
}

/** What a run needs besides the execution row, loaded once per claim. */
export interface Ctx {
  s: Services;
  agent: Agent;
  account: AccountRow;
  automation: AutomationRow;
  steps: Step[];
  contact: ContactRow;
  /** The execution as this runner last wrote it. */
  row: ExecutionRow;
  /** Usage of accounts without a quota, counted once the current transaction commits. */
  later: AutomationResource[];
  /** A finished send or request whose end the next transaction records (finishLater). */
  finish?: { log: { id: string; outcome: string; detail: Record<string, unknown> | null }; set: ExecUpdate } | undefined;
}

export type ExecUpdate = Updateable<AutomationExecutionsTable>;

export const renderCtx = (c: Ctx): RenderContext => ({
  variables: c.row.variables,
  attributes: c.contact.attributes,
  contact: { name: c.contact.name, phone: c.contact.phone },
});

/** The Spanish text of a refusal (a send, an attribute, a stage): what the execution fails with. */
export function refusalText(err: unknown): string | null {
  if (err instanceof ApiError) return err.message;
  if (err instanceof ValidationError) return err.problems.map((p) => p.message).join(' ');
  return null;
}

export const moveTo = (stepId: string | null): ExecUpdate => ({ current_step_id: stepId, state: 'ready', deadline_at: null, attempts: 0 });
export const lease = (c: Ctx): Date => new Date(c.s.clock.ms() + LEASE_MS);

/** A started step's end (an effect done, a wait over): its log row's outcome. */
export interface LogEnd {
  id: string;
  outcome: string;
  detail: Record<string, unknown> | null;
}

/** What a write of the execution records in the step log, in the same statement. */
export interface LogWrites {
  /** Started steps that end now (with the pending end of a send or request: finishLater). */
  finish?: LogEnd[];
  /** A wait's open log row of this step ends. */
  closeOpen?: { stepId: string; outcome: string };
  /** A new log row. */
  log?: LogEntry;
}

/**
 * The execution's update as CTEs, for updateExecution's statement or a statement of another
 * write (a send's: messages/send-store.ts): `x`, the execution's row if this runner still holds it;
 * the pending end of the step before (finishLater); `logs`. `gate` orders the update after the
 * caller's rows (their locks come first: the update reads them, as a one-time filter); what
 * follows `x` runs only when it updated (a lost claim writes nothing, even outside a transaction).
 */
export function executionWriteCtes(c: Ctx, set: ExecUpdate, logs: LogWrites = {}, gate?: RawBuilder<unknown>): RawBuilder<unknown> {
  const now = c.s.clock.now();
  const f = c.finish;
  const finish = [...(f ? [f.log] : []), ...(logs.finish ?? [])];
  // Every write of the claim is progress: the tries of our own failures count afresh.
  const fields: ExecUpdate = { ...f?.set, tries: 0, failed_at: null, last_error: null, ...set, updated_at: now };
  const assignments = sql.join(
    Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => sql`${sql.ref(k)} = ${v}`),
  );
  const ctes = [
    sql`x AS (UPDATE automation_executions SET ${assignments}
      WHERE id = ${c.row.id} AND claim = ${c.row.claim} AND status = 'running' ${gate ? sql`AND ${gate}` : sql``}
      RETURNING *)`,
  ];
  if (finish.length > 0)
    ctes.push(sql`fin AS (UPDATE automation_steps s SET ended_at = ${now}, outcome = v.outcome, detail = v.detail::jsonb
      FROM unnest(${finish.map((l) => l.id)}::uuid[], ${finish.map((l) => l.outcome)}::text[],
        ${finish.map((l) => (l.detail ? JSON.stringify(l.detail) : null))}::text[]) AS v(id, outcome, detail)
      WHERE s.id = v.id AND EXISTS (SELECT 1 FROM x))`);
  if (logs.closeOpen)
    ctes.push(sql`cl AS (UPDATE automation_steps SET ended_at = ${now}, outcome = ${logs.closeOpen.outcome}
      WHERE execution_id = ${c.row.id} AND step_id = ${logs.closeOpen.stepId} AND ended_at IS NULL AND EXISTS (SELECT 1 FROM x))`);
  if (logs.log) ctes.push(sql`lg AS (${logInsert(c, logs.log, now)} FROM x)`);
  return sql.join(ctes);
}

/**
 * Writes the execution's new fields if this runner still holds it (else Lost), and its step log
 * with it: one statement (executionWriteCtes) — `ahead` first (a write of the conversation, which
 * locks before the execution row), the pending end of the step before, `logs`, and the
 * execution's update (none when the claim is lost; a lost claim rolls the transaction back,
 * `ahead` with it).
 */
export async function updateExecution(
  trx: Trx,
  c: Ctx,
  set: ExecUpdate,
  logs: LogWrites = {},
  ahead?: ComposedWrite,
): Promise<ExecutionRow> {
  const ctes = executionWriteCtes(c, set, logs, ahead ? sql`(SELECT count(*) FROM ${sql.table(ahead.rows)}) >= 0` : undefined);
  const selected = ahead ? sql`x.*, ${ahead.notify} AS ahead_notified` : sql`x.*`;
  const out = (
    await sql<
      ExecutionRow & { ahead_notified?: unknown }
    >`WITH ${ahead ? sql`${ahead.ctes}, ` : sql``}${ctes} SELECT ${selected} FROM x`.execute(trx)
  ).rows[0];
  if (!out) throw new Lost();
  const { ahead_notified: _, ...row } = out;
  return row;
}

export interface LogEntry {
  step: Step;
  outcome: string | null | (() => string);
  id?: string;
  /** Not finished yet (an effect in progress, a wait). */
  open?: boolean;
  at?: Date;
  detail?: Record<string, unknown> | null;
}

/** `INSERT … SELECT <the row>` of a log entry; the caller adds its FROM (or none). */
const logInsert = (c: Ctx, e: LogEntry, now: Date) => {
  const at = e.at ?? now;
  return sql`INSERT INTO automation_steps (id, execution_id, step_id, type, started_at, ended_at, outcome, detail)
    SELECT ${e.id ?? newId()}::uuid, ${c.row.id}::uuid, ${e.step.id}::text, ${e.step.type}::text, ${at}::timestamptz,
      ${e.open ? null : at}::timestamptz, ${typeof e.outcome === 'function' ? e.outcome() : e.outcome}::text,
      ${e.detail ? JSON.stringify(e.detail) : null}::jsonb`;
};

export async function insertLog(trx: Trx, c: Ctx, e: LogEntry): Promise<void> {
  await logInsert(c, e, c.s.clock.now()).execute(trx);
}

/**
 * Counts one step (and one HTTP request) of the month unless it is a test; QuotaExceeded past the
 * plan's quota. With a quota the count is exact: the account's counter row is incremented in the
 * step's transaction and stays locked until commit, so two executions cannot both take the last
 * step. Without one (enterprise, or an override to null) nothing needs deciding: the count is
 * kept in memory and written in batches like API calls, after the step commits (`c.later`), and
 * the account's executions do not queue on one row.
 */
export async function count(trx: Trx, c: Ctx, http: boolean): Promise<void> {
  const later = countsLater(c, http);
  if (later) {
    c.later.push(...later);
    return;
  }
  const limits = effectiveLimits(c.account.plan, c.account.limits);
  const period = quotaPeriod(c.s.clock.now());
  const take = async (resource: AutomationResource, limit: number | null) => {
    if (limit === null) {
      c.later.push(resource);
      return;
    }
    const used = await addAutomationUsage(trx, c.account.id, period, resource);
    if (used > limit) throw new QuotaExceeded(resource, limit);
  };
  await take('automationSteps', limits.automationStepsPerMonth);
  if (http) await take('automationHttpRequests', limits.automationHttpRequestsPerMonth);
}

/**
 * A step's counts of the month when none of them has a quota: kept for after the commit (count()
 * would only push them to `c.later`), so the step's start needs no statement of its own; null when
 * one has a quota (count() takes it in the transaction). A test counts nothing.
 */
export function countsLater(c: Ctx, http: boolean): AutomationResource[] | null {
  if (c.row.test) return [];
  const limits = effectiveLimits(c.account.plan, c.account.limits);
  if (limits.automationStepsPerMonth !== null) return null;
  if (!http) return ['automationSteps'];
  return limits.automationHttpRequestsPerMonth === null ? ['automationSteps', 'automationHttpRequests'] : null;
}

/**
 * Runs a transaction of the execution; counts kept for after its commit are recorded then, and the
 * dispatcher is woken when it queued deliveries (an event of a step or of the end).
 */
export async function commit<T>(c: Ctx, fn: (trx: Trx) => Promise<T>): Promise<T> {
  let deliveries = false;
  const result = await transaction(c.s.db, async (trx) => {
    // A retried transaction starts over: what an earlier attempt counted did not happen.
    c.later = [];
    const r = await fn(trx);
    deliveries = queuedDeliveries(trx);
    return r;
  });
  if (deliveries) c.s.dispatcher.wake();
  for (const resource of c.later) c.s.usage.countLater(c.account.id, resource);
  c.later = [];
  // The pending finish (finishLater) went with it.
  c.finish = undefined;
  return result;
}

export interface Write<L> {
  /** Rows the step locks before the execution (a contact, a conversation). */
  before?: ((trx: Trx) => Promise<void>) | undefined;
  /** Or: lock something first and act on it after the execution row (a case: its events come last). */
  lock?: (trx: Trx) => Promise<L>;
  after?: (trx: Trx, locked: L) => Promise<void>;
  set: ExecUpdate;
  log?: LogEntry;
  finishLog?: { id: string; outcome: string; detail: Record<string, unknown> | null };
  closeOpenLog?: { stepId: string; outcome: string };
  count?: boolean;
  countHttp?: boolean;
  /** Releases the claim: due again at this time. */
  park?: Date | undefined;
  /** An ask that parks is due at once when an answer came in meanwhile. */
  parkIfInput?: boolean;
  at?: Date;
}

/** One transaction of a running execution (the order of locks in the file header). */
export async function write<L>(c: Ctx, w: Write<L>): Promise<void> {
  const now = w.at ?? c.s.clock.now();
  c.row = await commit(c, async (trx) => {
    if (w.before) await w.before(trx);
    const locked = w.lock ? await w.lock(trx) : (undefined as L);
    const parked = w.park ? { claim: null, run_at: w.parkIfInput ? sqlDueIfInput(w.park, now) : w.park } : { run_at: lease(c) };
    // The step log goes with the execution's update (a stage's log comes after its case's writes).
    const row = await updateExecution(
      trx,
      c,
      { ...w.set, ...parked },
      {
        ...(w.finishLog ? { finish: [w.finishLog] } : {}),
        ...(w.closeOpenLog ? { closeOpen: w.closeOpenLog } : {}),
        ...(w.log && !w.after ? { log: w.log } : {}),
      },
    );
    // The month's counter row is shared by every execution of the account and stays locked until
    // commit: take it last, so only the step's events (and a stage's log) wait behind it.
    if (w.count) await count(trx, c, w.countHttp ?? false);
    if (w.after) await w.after(trx, locked);
    // A stage step's outcome is decided in `after`.
    if (w.log && w.after) await insertLog(trx, c, w.log);
    return row;
  });
}

/** Due now when an answer came in while the question was going out, else at the deadline. */
const sqlDueIfInput = (deadline: Date, now: Date): Date =>
  sql<Date>`CASE WHEN inputs_pending > 0 THEN ${now}::timestamptz ELSE ${deadline}::timestamptz END` as unknown as Date;

/** Releases the claim: due again at `at` (a deadline not reached yet). */
export async function parkUntil(c: Ctx, at: Date): Promise<'rest'> {
  await commit(c, (trx) => updateExecution(trx, c, { claim: null, run_at: at }));
  return 'rest';
}

/** The process stops: give the execution back, due now (another process or the restart takes it). */
export async function park(c: Ctx, now: Date): Promise<void> {
  await commit(c, (trx) => updateExecution(trx, c, { claim: null, run_at: now })).catch((err) => {
    if (!(err instanceof Lost)) throw err;
  });
}
