// What an inbound message means for automations and AI agents, decided inside the inbound
// transaction (docs/automations.md "Triggers", docs/agents.md "Stretches"): while the
// conversation has a running execution the message is that execution's input and never a
// trigger; while an agent's stretch runs it is the agent's to answer; otherwise, unless the team
// is handling the conversation, the oldest active keyword automation whose keywords match starts,
// else a first_message automation for a contact's first message, else the receiving number's
// agent (when active) starts a stretch.
import { sql } from 'kysely';
import { startStretch, stretchMessageSql } from '../agents/stretches.js';
import type { Trx } from '../db/index.js';
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

/**
 * Called after the message is stored and before the events (docs/architecture.md "Lock order":
 * the execution row comes after the conversation, the case and the message).
 */
export async function automationForInbound(trx: Trx, m: InboundForAutomations, now: Date): Promise<InboundOutcome> {
  // 1. A running execution takes the message as input. A parked `ask` is due at once; one a runner
  //    holds finds `inputs_pending` when it parks (the row lock orders the two writes). The same
  //    statement reads the automations that could start when none runs (one round trip: this is
  //    every inbound message's path).
  //    A running stretch gets the message the same way: `pending` tells a runner holding it that
  //    a message came in; at rest it is due at once.
  const c = m.conversation;
  const numberAgent = m.socialAccount ? m.socialAccount.agent_id : (m.number?.agent_id ?? null);
  const { rows } = await sql<{
    kind: 'execution' | 'stretch' | 'candidates' | 'agent';
    id: string | null;
    claim: string | null;
    state: string | null;
    data: unknown;
  }>`
    WITH running AS (
      UPDATE automation_executions
      SET inputs_pending = inputs_pending + 1,
          run_at = CASE WHEN claim IS NULL AND state = 'asked' THEN ${now}::timestamptz ELSE run_at END,
          updated_at = ${now}
      WHERE conversation_id = ${c.id} AND status = 'running'
      RETURNING id, claim, state),
    stretch AS (${stretchMessageSql(c.id, now, sql`SELECT 1 FROM running`)})
    SELECT 'execution' AS kind, r.id, r.claim, r.state, NULL::jsonb AS data FROM running r
    UNION ALL
    SELECT 'stretch', st.id, st.claim, NULL, NULL FROM stretch st
    UNION ALL
    SELECT 'candidates', NULL, NULL, NULL, COALESCE(jsonb_agg(jsonb_build_object(
        'id', a.id, 'name', a.name, 'account_id', a.account_id, 'trigger', a.trigger,
        'phone_number_id', a.phone_number_id, 'first_step_id', a.steps->0->>'id', 'starts_per_minute', a.starts_per_minute)
        ORDER BY a.created_at, a.id), '[]'::jsonb)
    FROM automations a
    WHERE NOT EXISTS (SELECT 1 FROM running) AND NOT EXISTS (SELECT 1 FROM stretch)
      AND a.account_id = ${m.accountId} AND a.status = 'active'
      AND a.deleted_at IS NULL AND a.trigger->>'type' IN ('keyword', 'first_message')
    UNION ALL
    SELECT 'agent', ag.id, NULL, NULL, jsonb_build_object('id', ag.id, 'name', ag.name, 'version', ag.version)
    FROM agents ag
    WHERE ${numberAgent}::uuid IS NOT NULL AND ag.id = ${numberAgent}::uuid AND ag.status = 'active' AND ag.deleted_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM running) AND NOT EXISTS (SELECT 1 FROM stretch)`.execute(trx);
  const running = rows.find((r) => r.kind === 'execution');
  if (running?.id) {
    await trx
      .insertInto('automation_inputs')
      .values({ execution_id: running.id, message_id: m.messageId, text: m.text, created_at: now })
      .execute();
    return { kind: 'input', executionId: running.id, wake: running.claim === null && running.state === 'asked' };
  }
  const stretch = rows.find((r) => r.kind === 'stretch');
  if (stretch?.id) return { kind: 'agent', stretchId: stretch.id, wake: stretch.claim === null };
  if (m.optOut) return null;
  // 2. The team took over this conversation's case: no automation or agent answers (until the case closes).
  if (c.handling_type === 'team' && (c.handling_case_id === null || c.handling_case_id === m.openCaseId)) return null;

  const candidates = (rows.find((r) => r.kind === 'candidates')?.data as Candidate[] | null) ?? [];
  const listening = candidates.filter((a) => listensOn(a, m.number, m.socialAccount ?? null));
  const agent = rows.find((r) => r.kind === 'agent')?.data as Pick<AgentRow, 'id' | 'name' | 'version'> | undefined;
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
    if (first && (m.contactCreated || (await isFirstInbound(trx, m.contactId, m.messageId)))) chosen = first;
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
async function isFirstInbound(trx: Trx, contactId: string, messageId: string): Promise<boolean> {
  const earlier = await trx
    .selectFrom('messages')
    .select('id')
    .where('contact_id', '=', contactId)
    .where('direction', '=', 'inbound')
    .where('id', '<>', messageId)
    .limit(1)
    .executeTakeFirst();
  return !earlier;
}
