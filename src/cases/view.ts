// The Case resource (api.md §2 "Case" plus the `stage` object of decisions.md) and the data of
// case.* events (decisions.md "Event data keys").
import { z } from 'zod';
import type { Executor } from '../db/index.js';
import type { By, CaseRow } from '../db/types.js';
import { Timestamp, Uuid } from '../http/schemas.js';

/** A case row with what its views need from other tables. */
export type CaseJoined = CaseRow & {
  contact_name: string | null;
  pipeline_name: string | null;
  stage_name: string | null;
  stage_kind: string | null;
};

/** Cases joined with contact, pipeline and stage; add `where`s on `cases.*`. */
export const casesQuery = (db: Executor) =>
  db
    .selectFrom('cases')
    .leftJoin('contacts', 'contacts.id', 'cases.contact_id')
    .leftJoin('pipelines', 'pipelines.id', 'cases.pipeline_id')
    .leftJoin('stages', 'stages.id', 'cases.stage_id')
    .selectAll('cases')
    .select(['contacts.name as contact_name', 'pipelines.name as pipeline_name', 'stages.name as stage_name', 'stages.kind as stage_kind']);

export async function loadCase(db: Executor, id: string): Promise<CaseJoined | undefined> {
  return casesQuery(db).where('cases.id', '=', id).executeTakeFirst();
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));
const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** decisions.md: `hot` (score ≥ 70), `warm` (40–69), `cold` (< 40), null without score. */
export const scoreBucket = (score: number | null): 'hot' | 'warm' | 'cold' | null =>
  score === null ? null : score >= 70 ? 'hot' : score >= 40 ? 'warm' : 'cold';

const ByView = z
  .object({
    type: z
      .enum(['ai_app', 'member'])
      .optional()
      .describe('ai_app: a connected AI app did it (MCP); member: a console member (docs/console.md)'),
    id: z.string(),
    name: z.string(),
  })
  .nullable()
  .describe('The team member, or the connected AI app (`type: "ai_app"`); null when automatic or by an API key');

export const CaseStage = z
  .object({
    pipeline: z.object({ id: Uuid, name: z.string() }),
    stage: z.object({ id: Uuid, name: z.string(), kind: z.enum(['open', 'won', 'lost']) }),
    enteredAt: Timestamp,
    amount: z.number().optional().describe('Only for sales'),
    fields: z.record(z.string(), z.unknown()),
  })
  .nullable()
  .describe('The pipeline stage of the case, or null when it is in no pipeline');
export type CaseStage = z.infer<typeof CaseStage>;

export function stageObject(r: CaseJoined): CaseStage {
  if (!r.stage_id || !r.pipeline_id || !r.stage_kind) return null;
  const amount = num(r.stage_amount);
  return {
    pipeline: { id: r.pipeline_id, name: r.pipeline_name ?? '' },
    stage: { id: r.stage_id, name: r.stage_name ?? '', kind: r.stage_kind as 'open' | 'won' | 'lost' },
    enteredAt: (r.stage_entered_at ?? r.opened_at).toISOString(),
    ...(amount !== null || r.stage_kind === 'won' ? { amount: amount ?? 0 } : {}),
    fields: r.stage_fields ?? {},
  };
}

export const CaseView = z.object({
  id: Uuid,
  conversationId: Uuid,
  contactId: Uuid,
  contactName: z.string(),
  status: z.enum(['open', 'closed']),
  openedAt: Timestamp,
  lastInboundAt: Timestamp,
  closedAt: Timestamp.nullable(),
  closeReason: z.enum(['inactivity', 'manual', 'agent_goal', 'conversation_closed', 'stage', 'stale']).nullable(),
  closedBy: ByView,
  reasonId: z.string().nullable(),
  reason: z.string().nullable(),
  subreasonId: z.string().nullable(),
  subreason: z.string().nullable(),
  reasonSource: z.enum(['classifier', 'person']).nullable(),
  reasonStatus: z.enum(['pending', 'set', 'none']),
  reasonConfidence: z.number().nullable(),
  reasonSetBy: ByView,
  reasonSetAt: Timestamp.nullable(),
  handledBy: z.enum(['none', 'automation', 'ai', 'human', 'mixed']),
  agentId: z.string().nullable(),
  agentName: z.string().nullable(),
  handedOffAt: Timestamp.nullable(),
  goalAt: Timestamp.nullable(),
  inactivityHours: z.number().int(),
  ad: z.object({ id: z.string(), headline: z.string(), sourceUrl: z.string() }).nullable(),
  score: z.number().int().nullable(),
  scoreBucket: z.enum(['hot', 'warm', 'cold']).nullable(),
  scoreDetail: z.array(z.object({ question: z.string(), weight: z.number(), probability: z.number() })),
  scoredReason: z.boolean(),
  outcome: z.enum(['won', 'lost']).nullable(),
  outcomeAmount: z.number().nullable(),
  outcomeCurrency: z.string().nullable(),
  outcomeNote: z.string().nullable(),
  outcomeSource: z.enum(['person', 'api']).nullable(),
  outcomeBy: ByView,
  outcomeAt: Timestamp.nullable(),
  outcomeExternalId: z.string().nullable(),
  stage: CaseStage,
  pipelineId: Uuid.nullable(),
});
export type CaseView = z.infer<typeof CaseView>;

type AdJson = { id: string; headline: string; sourceUrl: string; at?: string };
const adView = (ad: AdJson | null) => (ad ? { id: ad.id, headline: ad.headline, sourceUrl: ad.sourceUrl } : null);
const byView = (b: By | null): By | null =>
  b ? (b.type === 'ai_app' || b.type === 'member' ? { type: b.type, id: b.id, name: b.name } : { id: b.id, name: b.name }) : null;

export function caseView(r: CaseJoined): CaseView {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    contactId: r.contact_id,
    contactName: r.contact_name ?? '',
    status: r.status as CaseView['status'],
    openedAt: r.opened_at.toISOString(),
    lastInboundAt: r.last_inbound_at.toISOString(),
    closedAt: iso(r.closed_at),
    closeReason: r.close_reason as CaseView['closeReason'],
    closedBy: byView(r.closed_by),
    reasonId: r.reason_id,
    reason: r.reason,
    subreasonId: r.subreason_id,
    subreason: r.subreason,
    reasonSource: r.reason_source as CaseView['reasonSource'],
    reasonStatus: r.reason_status as CaseView['reasonStatus'],
    reasonConfidence: r.reason_confidence,
    reasonSetBy: byView(r.reason_set_by),
    reasonSetAt: iso(r.reason_set_at),
    handledBy: r.handled_by as CaseView['handledBy'],
    agentId: r.agent_id,
    agentName: r.agent_name,
    handedOffAt: iso(r.handed_off_at),
    goalAt: iso(r.goal_at),
    inactivityHours: r.inactivity_hours,
    ad: adView(r.ad as AdJson | null),
    score: r.score,
    scoreBucket: scoreBucket(r.score),
    scoreDetail: r.score_detail ?? [],
    scoredReason: r.score !== null,
    outcome: r.outcome as CaseView['outcome'],
    outcomeAmount: num(r.outcome_amount),
    outcomeCurrency: r.outcome_currency,
    outcomeNote: r.outcome_note,
    outcomeSource: r.outcome_source as CaseView['outcomeSource'],
    outcomeBy: byView(r.outcome_by),
    outcomeAt: iso(r.outcome_at),
    outcomeExternalId: r.outcome_external_id,
    stage: stageObject(r),
    pipelineId: r.pipeline_id,
  };
}

/**
 * `data` of case.* events (decisions.md "Event data keys"): reason and sub-reason as {id, name},
 * `ad` as the headline, `outcome` as an object; the other Case fields ride along unchanged.
 */
export function caseEventData(r: CaseJoined): Record<string, unknown> {
  const v = caseView(r);
  return {
    id: v.id,
    conversationId: v.conversationId,
    contactId: v.contactId,
    contactName: v.contactName,
    status: v.status,
    openedAt: v.openedAt,
    lastInboundAt: v.lastInboundAt,
    closedAt: v.closedAt,
    closeReason: v.closeReason,
    closedBy: v.closedBy,
    reason: v.reason !== null ? { id: v.reasonId, name: v.reason } : null,
    subreason: v.subreason !== null ? { id: v.subreasonId, name: v.subreason } : null,
    reasonSource: v.reasonSource,
    reasonStatus: v.reasonStatus,
    reasonConfidence: v.reasonConfidence,
    reasonSetBy: v.reasonSetBy,
    reasonSetAt: v.reasonSetAt,
    handledBy: v.handledBy,
    agentId: v.agentId,
    agentName: v.agentName,
    handedOffAt: v.handedOffAt,
    goalAt: v.goalAt,
    inactivityHours: v.inactivityHours,
    ad: v.ad ? v.ad.headline : null,
    score: v.score,
    scoreBucket: v.scoreBucket,
    scoreDetail: v.scoreDetail,
    outcome:
      v.outcome !== null
        ? {
            result: v.outcome,
            amount: v.outcomeAmount,
            currency: v.outcomeCurrency,
            note: v.outcomeNote,
            externalId: v.outcomeExternalId,
            source: v.outcomeSource,
            by: v.outcomeBy,
            at: v.outcomeAt,
          }
        : null,
    stage: v.stage,
  };
}
