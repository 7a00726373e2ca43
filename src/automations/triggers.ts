// What an inbound message means for automations and AI agents, decided inside the inbound
// transaction (docs/automations.md "Triggers", docs/agents.md "Stretches"): while the
// conversation has a running execution the message is that execution's input and never a
// trigger; while an agent's stretch runs it is the agent's to answer; otherwise, unless the team
// is handling the conversation, the oldest active keyword automation whose keywords match starts,
// else a first_message automation for a contact's first message, else the receiving number's
// agent (when active) starts a stretch.
import { sql } from 'kysely';
import { startStretch, stretchMessagesSql } from '../agents/stretches.js';
import type { Executor, Trx } from '../db/index.js';
import type { AgentRow, AutomationRow, ConversationRow, PhoneNumberRow, SocialAccountRow } from '../db/types.js';
import { insertExecution } from './executions.js';
import type { Trigger } from './flow.js';
import { keywordMatches } from './text.js';

export interface InboundForAutomations {
  accountId: string;
  /** The conversation as it was before this message (locked by the caller). */
  conversation: ConversationRow;
  contactId: string;
  /** The receiving number (null on the social channel). */
  number: PhoneNumberRow | null;
  /** The social account that received it (the social channel): its agent plays the number's role. */
  socialAccount?: SocialAccountRow | null;
  messageId: string;
  text: string | null;
  /** The contact was created by this message. */
  contactCreated: boolean;
  /** The conversation's open case after this message (null when none). */
  openCaseId: string | null;
  /** An opt-out message starts nothing. */
  optOut: boolean;
  /** Counts a start against the automation's rate (loops.ts): false when over it (nothing starts). */
  admitStart: (a: Pick<AutomationRow, 'id' | 'starts_per_minute'>) => Promise<boolean>;
}

export type InboundOutcome =
  | { kind: 'input'; executionId: string; wake: boolean }
  | { kind: 'started'; executionId: string }
  /** The agent's stretch has a message to answer (a new stretch, or one at rest). */
  | { kind: 'agent'; stretchId: string; wake: boolean }
  | null;

/** What the round's one statement read (and moved) for one conversation. */
interface Read {
  kind: 'execution' | 'stretch' | 'candidates' | 'agent';
  conversation_id: string | null;
  id: string | null;
  claim: string | null;
  state: string | null;
  data: unknown;
}

/**
 * Called after the messages are stored and before the events (docs/architecture.md "Lock order":
 * the execution row comes after the conversation, the case and the message), for messages of
 * distinct conversations of one account (one round of the inbound path). One statement for all of
 * them: a running execution takes its conversation's message as input (a parked `ask` is due at
 * once; one a runner holds finds `inputs_pending` when it parks: the row lock orders the two
 * writes); a running stretch learns the same way (`pending`; at rest it is due at once); and the
 * automations that could start and the numbers' agents are read. Then one insert for every
 * execution's input; a start writes its own execution or stretch. Returns each message's outcome.
 */
export async function automationsForInbound(trx: Trx, ms: InboundForAutomations[], now: Date): Promise<InboundOutcome[]> {
  if (ms.length === 0) return [];
  const accountId = ms[0]!.accountId;
  const agentOf = (m: InboundForAutomations) => (m.socialAccount ? m.socialAccount.agent_id : (m.number?.agent_id ?? null));
  const agentIds = [...new Set(ms.map(agentOf).filter((a): a is string => a !== null))];
  const { rows } = await sql<Read>`
    WITH f AS (SELECT * FROM unnest(${ms.map((m) => m.conversation.id)}::uuid[]) AS f(cid)),
    running AS (
      UPDATE automation_executions e
      SET inputs_pending = e.inputs_pending + 1,
          run_at = CASE WHEN e.claim IS NULL AND e.state = 'asked' THEN ${now}::timestamptz ELSE e.run_at END,
          updated_at = ${now}
      FROM f
      WHERE e.conversation_id = f.cid AND e.status = 'running'
      RETURNING e.id, e.claim, e.state, e.conversation_id),
    stretch AS (${stretchMessagesSql('f', 'running', now)})
    SELECT 'execution' AS kind, r.conversation_id, r.id, r.claim, r.state, NULL::jsonb AS data FROM running r
    UNION ALL
    SELECT 'stretch', st.conversation_id, st.id, st.claim, NULL, NULL FROM stretch st
    UNION ALL
    SELECT 'candidates', NULL, NULL, NULL, NULL, COALESCE(jsonb_agg(jsonb_build_object(
        'id', a.id, 'name', a.name, 'account_id', a.account_id, 'trigger', a.trigger,
        'phone_number_id', a.phone_number_id, 'first_step_id', a.steps->0->>'id', 'starts_per_minute', a.starts_per_minute)
        ORDER BY a.created_at, a.id), '[]'::jsonb)
    FROM automations a
    WHERE a.account_id = ${accountId} AND a.status = 'active'
      AND a.deleted_at IS NULL AND a.trigger->>'type' IN ('keyword', 'first_message')
    UNION ALL
    SELECT 'agent', NULL, ag.id, NULL, NULL, jsonb_build_object('id', ag.id, 'name', ag.name, 'version', ag.version)
    FROM agents ag
    WHERE ag.id = ANY (${agentIds}::uuid[]) AND ag.status = 'active' AND ag.deleted_at IS NULL`.execute(trx);
  const candidates = (rows.find((r) => r.kind === 'candidates')?.data as Candidate[] | null) ?? [];
  const agents = new Map(rows.filter((r) => r.kind === 'agent').map((r) => [r.id!, r.data as Pick<AgentRow, 'id' | 'name' | 'version'>]));
  const outcomes: InboundOutcome[] = [];
  const inputs: { execution_id: string; message_id: string; text: string | null; created_at: Date }[] = [];
  for (const m of ms) {
    const mine = rows.filter((r) => r.conversation_id === m.conversation.id);
    const running = mine.find((r) => r.kind === 'execution');
    if (running?.id) {
      inputs.push({ execution_id: running.id, message_id: m.messageId, text: m.text, created_at: now });
      outcomes.push({ kind: 'input', executionId: running.id, wake: running.claim === null && running.state === 'asked' });
      continue;
    }
    const stretch = mine.find((r) => r.kind === 'stretch');
    if (stretch?.id) {
      outcomes.push({ kind: 'agent', stretchId: stretch.id, wake: stretch.claim === null });
      continue;
    }
    const agentId = agentOf(m);
    outcomes.push(await startForInbound(trx, m, candidates, agentId ? agents.get(agentId) : undefined, now));
  }
  if (inputs.length > 0) await trx.insertInto('automation_inputs').values(inputs).execute();
  return outcomes;
}

/**
 * A message no running execution or stretch takes: unless the team is handling the conversation,
 * the oldest active keyword automation whose keywords match starts, else a first_message automation
 * for a contact's first message, else the number's agent starts a stretch.
 */
async function startForInbound(
  trx: Trx,
  m: InboundForAutomations,
  candidates: Candidate[],
  agent: Pick<AgentRow, 'id' | 'name' | 'version'> | undefined,
  now: Date,
): Promise<InboundOutcome> {
  const c = m.conversation;
  if (m.optOut) return null;
  // 2. The team took over this conversation's case: no automation or agent answers (until the case closes).
  if (c.handling_type === 'team' && (c.handling_case_id === null || c.handling_case_id === m.openCaseId)) return null;

  const listening = candidates.filter((a) => listensOn(a, m.number, m.socialAccount ?? null));
  const byAgent = async (): Promise<InboundOutcome> => {
    if (!agent) return null;
    const stretchId = await startStretch(
      trx,
      {
        accountId: m.accountId,
        agent,
        conversationId: c.id,
        contactId: m.contactId,
        phoneNumberId: c.phone_number_id,
        assignedBy: 'number',
        sinceId: m.messageId,
      },
      now,
    );
    return stretchId ? { kind: 'agent', stretchId, wake: true } : null;
  };
  if (listening.length === 0) return byAgent();

  let chosen = listening.find((a) => {
    const t = a.trigger as Trigger;
    return t.type === 'keyword' && keywordMatches(t, m.text);
  });
  if (!chosen) {
    const first = listening.find((a) => (a.trigger as Trigger).type === 'first_message');
    if (first && (m.contactCreated || (await isFirstInbound(trx, m.accountId, m.contactId, m.messageId)))) chosen = first;
  }
  if (!chosen) return byAgent();
  // Past the automation's start rate the message starts nothing (counted: chasqui_limit_refusals_total).
  if (!(await m.admitStart(chosen))) return null;
  const row = await insertExecution(
    trx,
    {
      automation: chosen,
      firstStepId: chosen.first_step_id,
      conversationId: c.id,
      contactId: m.contactId,
      phoneNumberId: c.phone_number_id,
      variables: {},
      trigger: (chosen.trigger as Trigger).type,
      test: false,
    },
    now,
  );
  return row ? { kind: 'started', executionId: row.id } : null;
}

/** An active keyword or first_message automation, as the inbound statement reads it. */
interface Candidate {
  id: string;
  name: string;
  account_id: string;
  trigger: Trigger;
  phone_number_id: string | null;
  first_step_id: string | null;
  starts_per_minute: number | null;
}

/**
 * An automation listens on its number, or (phoneNumberId null) on the account's default number and
 * on its social accounts (an automation names no social account).
 */
const listensOn = (a: Pick<AutomationRow, 'phone_number_id'>, number: PhoneNumberRow | null, social: SocialAccountRow | null): boolean =>
  social !== null
    ? a.phone_number_id === null
    : number !== null && (a.phone_number_id === null ? number.is_default : a.phone_number_id === number.id);

/** No earlier inbound message of the contact (a contact added by the API who writes for the first time). */
export async function isFirstInbound(trx: Executor, accountId: string, contactId: string, messageId: string): Promise<boolean> {
  // Through the contact's conversations (their unique index, then each one's messages): messages
  // has no index by contact, and a filter on it read the whole table (50 ms at 200,000 messages).
  const earlier = await trx
    .selectFrom('conversations as c')
    .innerJoin('messages as m', 'm.conversation_id', 'c.id')
    .select('m.id')
    .where('c.account_id', '=', accountId)
    .where('c.contact_id', '=', contactId)
    .where('m.direction', '=', 'inbound')
    .where('m.id', '<>', messageId)
    .limit(1)
    .executeTakeFirst();
  return !earlier;
}
