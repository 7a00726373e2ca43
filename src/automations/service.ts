// Automations (docs/automations.md): the operator's CRUD, status changes and the incoming
// webhook's token. A flow is validated as a whole when saved (automations/flow.ts); pausing or
// deleting an automation cancels its running executions in the same transaction.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db, Executor } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AutomationRow, ExecutionRow } from '../db/types.js';
import { ApiError, ValidationError, type ValidationProblem } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { isUuid, newId } from '../lib/ids.js';
import { type Keyring, openOrNull } from '../secrets/keyring.js';
import { sealStepHeaders, viewStepHeaders } from '../secrets/steps.js';
import type { Services } from '../services.js';
import { cancelRunning } from './cancel.js';
import { type FlowOptions, type Step, type Trigger, validateFlow } from './flow.js';
import { type AutomationView, automationView } from './view.js';

export interface AutomationInput {
  name: string;
  status?: 'draft' | 'active' | 'paused' | undefined;
  trigger: unknown;
  steps: unknown;
  phoneNumberId?: string | null | undefined;
  /** Starts a minute (loops.ts); null: the default. */
  startsPerMinute?: number | null | undefined;
}

export type AutomationPatch = Partial<AutomationInput>;

const view = (s: Services, a: AutomationRow): AutomationView => automationView(a, s.publicUrl, s.secrets);

/** 32 random bytes, base64url: 43 characters (the spec asks for 32 or more). */
const newToken = (): string => randomBytes(32).toString('base64url');
const hashToken = (t: string): string => createHash('sha256').update(t).digest('hex');

/**
 * A token's columns: sealed (the operator API shows its URL again) and its hash (the lookup key).
 * Without a keyring (the demo seed) it is stored plain and sealed by the start pass that follows.
 */
const tokenColumns = (token: string | null, ring: Keyring | undefined) => ({
  webhook_token: token && ring ? ring.seal(token, 'automations.webhook_token') : token,
  webhook_token_hash: token ? hashToken(token) : null,
});

/** How flows are checked in this process: literal private URLs refused unless ALLOW_PRIVATE_WEBHOOKS. */
const flowOptions = (s: Services): FlowOptions => ({ refusePrivateUrls: !s.config.allowPrivateWebhooks });

/** Validates trigger, steps and number against the account; throws the 400 with every problem. */
async function checkFlow(
  db: Executor,
  accountId: string,
  input: { trigger: unknown; steps: unknown; phoneNumberId?: string | null | undefined },
  options: FlowOptions,
): Promise<{ trigger: Trigger; steps: Step[] }> {
  const problems: ValidationProblem[] = [];
  const result = await validateFlow(
    { trigger: input.trigger, steps: input.steps },
    {
      templateOfAccount: async (id) =>
        isUuid(id) &&
        !!(await db
          .selectFrom('templates')
          .select('id')
          .where('account_id', '=', accountId)
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirst()),
      stageOfAccount: async (id) =>
        isUuid(id) &&
        !!(await db
          .selectFrom('stages')
          .innerJoin('pipelines', 'pipelines.id', 'stages.pipeline_id')
          .select('stages.id')
          .where('pipelines.account_id', '=', accountId)
          .where('stages.id', '=', id)
          .executeTakeFirst()),
      agentOfAccount: async (id) =>
        isUuid(id) &&
        !!(await db
          .selectFrom('agents')
          .select('id')
          .where('account_id', '=', accountId)
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirst()),
    },
    options,
  );
  if (!result.ok) problems.push(...result.problems);
  if (input.phoneNumberId) {
    const n = isUuid(input.phoneNumberId)
      ? await db
          .selectFrom('phone_numbers')
          .select('id')
          .where('account_id', '=', accountId)
          .where('id', '=', input.phoneNumberId)
          .executeTakeFirst()
      : undefined;
    if (!n) problems.push({ path: ['phoneNumberId'], message: textFor('automation_number_unknown') });
  }
  if (problems.length > 0 || !result.ok) throw new ValidationError(problems);
  return { trigger: result.trigger, steps: result.steps };
}

export const createAutomation = async (s: Services, accountId: string, input: AutomationInput): Promise<AutomationView> =>
  view(s, await insertAutomation(s.db, accountId, input, s.clock.now(), flowOptions(s), s.secrets));

/**
 * Validates and stores a new automation (the operator API, and the demo seed inside its own
 * transaction): 400 with every problem of the flow, else the row with the defaults filled in.
 */
export async function insertAutomation(
  db: Executor,
  accountId: string,
  input: AutomationInput,
  now: Date,
  options: FlowOptions,
  ring?: Keyring,
): Promise<AutomationRow> {
  const flow = await checkFlow(db, accountId, input, options);
  const token = flow.trigger.type === 'webhook' ? newToken() : null;
  return db
    .insertInto('automations')
    .values({
      id: newId(),
      account_id: accountId,
      name: input.name,
      status: input.status ?? 'draft',
      trigger: JSON.stringify(flow.trigger),
      steps: JSON.stringify(ring ? sealStepHeaders(flow.steps, ring) : flow.steps),
      phone_number_id: input.phoneNumberId ?? null,
      ...tokenColumns(token, ring),
      starts_per_minute: input.startsPerMinute ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The account's automation (not deleted), or 404. */
export async function getAutomationRow(db: Executor, accountId: string, id: string): Promise<AutomationRow> {
  const a = isUuid(id)
    ? await db
        .selectFrom('automations')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!a) throw new ApiError('automation_not_found');
  return a;
}

export const getAutomation = async (s: Services, accountId: string, id: string): Promise<AutomationView> =>
  view(s, await getAutomationRow(s.db, accountId, id));

/** Newest first (the public list omits steps and webhookUrl). */
export const listAutomationRows = (db: Db, accountId: string): Promise<AutomationRow[]> =>
  db
    .selectFrom('automations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();

/** How many executions of each status an automation had: running ones whenever they started, the rest of the last 30 days. */
export type ExecutionCounts = Record<ExecutionRow['status'], number>;

const COUNT_DAYS = 30;

async function executionCounts(s: Services, accountId: string, ids: string[]): Promise<Map<string, ExecutionCounts>> {
  const counts = new Map<string, ExecutionCounts>();
  for (const id of ids) counts.set(id, { running: 0, completed: 0, handed_off: 0, failed: 0, cancelled: 0 });
  if (ids.length === 0) return counts;
  const since = new Date(s.clock.now().getTime() - COUNT_DAYS * 86_400_000);
  const rows = await s.db
    .selectFrom('automation_executions')
    .select(['automation_id', 'status', (eb) => eb.fn.countAll<string>().as('n')])
    .where('account_id', '=', accountId)
    .where('automation_id', 'in', ids)
    .where((eb) => eb.or([eb('status', '=', 'running'), eb('started_at', '>=', since)]))
    .groupBy(['automation_id', 'status'])
    .execute();
  for (const r of rows) {
    const c = counts.get(r.automation_id);
    if (c) c[r.status] = Number(r.n);
  }
  return counts;
}

/** The operator's list: each automation with its execution counts (`executions`). */
export async function listAutomations(s: Services, accountId: string): Promise<(AutomationView & { executions: ExecutionCounts })[]> {
  const rows = await listAutomationRows(s.db, accountId);
  const counts = await executionCounts(
    s,
    accountId,
    rows.map((a) => a.id),
  );
  return rows.map((a) => ({ ...view(s, a), executions: counts.get(a.id)! }));
}

/**
 * Changes name, status, trigger, steps, number or start rate. A new trigger or new steps are validated with
 * the rest of the flow. Leaving `active` (paused, draft) cancels the running executions; running
 * executions of an active automation whose steps change go on with the new steps (a step id that
 * no longer exists fails them). A trigger that becomes `webhook` gets a token; one that stops
 * being `webhook` loses it.
 */
export async function updateAutomation(s: Services, accountId: string, id: string, patch: AutomationPatch): Promise<AutomationView> {
  const stored = await getAutomationRow(s.db, accountId, id);
  // Checked as written (header values opened), stored sealed again.
  const current = { ...stored, steps: viewStepHeaders(stored.steps, s.secrets) };
  const changesFlow = patch.trigger !== undefined || patch.steps !== undefined;
  const flow = changesFlow
    ? await checkFlow(
        s.db,
        accountId,
        { trigger: patch.trigger ?? current.trigger, steps: patch.steps ?? current.steps, phoneNumberId: patch.phoneNumberId },
        flowOptions(s),
      )
    : patch.phoneNumberId
      ? await checkFlow(
          s.db,
          accountId,
          { trigger: current.trigger, steps: current.steps, phoneNumberId: patch.phoneNumberId },
          flowOptions(s),
        )
      : null;
  const now = s.clock.now();
  return transaction(s.db, async (trx) => {
    const trigger = (flow?.trigger ?? current.trigger) as Trigger;
    const keepsToken = trigger.type === 'webhook';
    const token =
      keepsToken && current.webhook_token
        ? { webhook_token: current.webhook_token, webhook_token_hash: current.webhook_token_hash }
        : tokenColumns(keepsToken ? newToken() : null, s.secrets);
    const row = await trx
      .updateTable('automations')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.status !== undefined ? { status: patch.status } : {}),
        ...(flow ? { trigger: JSON.stringify(flow.trigger), steps: JSON.stringify(sealStepHeaders(flow.steps, s.secrets)) } : {}),
        ...(patch.phoneNumberId !== undefined ? { phone_number_id: patch.phoneNumberId } : {}),
        ...(patch.startsPerMinute !== undefined ? { starts_per_minute: patch.startsPerMinute } : {}),
        ...token,
        updated_at: now,
      })
      .where('id', '=', current.id)
      .where('deleted_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new ApiError('automation_not_found');
    if (row.status !== 'active') await cancelRunning(trx, { automationId: row.id }, now);
    return view(s, row);
  });
}

/** Deletes (hidden from every list; executions stay readable by the operator) and cancels its running executions. */
export async function deleteAutomation(s: Services, accountId: string, id: string): Promise<void> {
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    const row = await trx
      .updateTable('automations')
      .set({ deleted_at: now, status: 'paused', webhook_token: null, webhook_token_hash: null, updated_at: now })
      .where('account_id', '=', accountId)
      .where('id', '=', isUuid(id) ? id : '00000000-0000-0000-0000-000000000000')
      .where('deleted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!row) throw new ApiError('automation_not_found');
    await cancelRunning(trx, { automationId: row.id }, now);
  });
}

/** A new incoming-webhook token: the old URL stops working at once. */
export async function rotateWebhook(s: Services, accountId: string, id: string): Promise<AutomationView> {
  const current = await getAutomationRow(s.db, accountId, id);
  if ((current.trigger as Trigger).type !== 'webhook') throw new ApiError('automation_not_webhook');
  const token = newToken();
  const row = await s.db
    .updateTable('automations')
    .set({ ...tokenColumns(token, s.secrets), updated_at: s.clock.now() })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return view(s, row);
}

/**
 * The automation an incoming-webhook token opens, or null. Looked up by the token's hash, then
 * compared in constant time, so neither the lookup nor the comparison tells how much matched.
 */
export async function automationByToken(s: Services, token: string): Promise<AutomationRow | null> {
  if (token.length < 32 || token.length > 200) return null;
  const row = await s.db
    .selectFrom('automations')
    .selectAll()
    .where('webhook_token_hash', '=', hashToken(token))
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  const mine = openOrNull(s.secrets, row?.webhook_token, 'automations.webhook_token');
  if (!row || mine === null) return null;
  const a = Buffer.from(mine);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b) ? row : null;
}
