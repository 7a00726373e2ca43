// Table types for Kysely, mirroring migrations/*.sql (snake_case, as the database names them).
import type { ColumnType, Generated, Selectable, Updateable } from 'kysely';

type Ts = ColumnType<Date, Date | string, Date | string>;
type TsDefault = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string | T, string | T>;
type JsonDefault<T> = ColumnType<T, string | T | undefined, string | T>;
/** numeric comes back as text from both drivers. */
type Numeric = ColumnType<string, number | string, number | string>;

/** Who did it: a team member `{id, name}`, or a connected AI app with `type: 'ai_app'` (decisions.md). */
export type By = { type?: 'ai_app' | 'member'; id: string; name: string };

export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  limits: JsonDefault<Record<string, number | null>>;
  created_at: TsDefault;
  updated_at: TsDefault;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: TsDefault;
  revoked_at: Ts | null;
}

export interface PhoneNumbersTable {
  id: string;
  account_id: string;
  phone: string;
  name: string | null;
  provider: string;
  status: Generated<string>;
  is_default: Generated<boolean>;
  cloud_phone_number_id: string | null;
  cloud_waba_id: string | null;
  cloud_access_token: string | null;
  cloud_app_secret: string | null;
  cloud_verify_token: string | null;
  created_at: TsDefault;
  /** The AI agent that answers this number's conversations (docs/agents.md). */
  agent_id: Generated<string | null>;
  /** Messages per second Meta allows the number (1..1000, default 80; migrations/0016): its sends are paced under it. */
  throughput_per_second: Generated<number>;
}

/** A social-channel account (migrations/0014; docs/operator.md "Social accounts"). */
export interface SocialAccountsTable {
  id: string;
  account_id: string;
  name: string;
  provider: 'sandbox' | 'instagram';
  status: Generated<'connected' | 'disconnected'>;
  /** instagram: our Instagram account id (webhooks' entry[].id and recipient.id). */
  ig_user_id: string | null;
  access_token: string | null;
  app_secret: string | null;
  verify_token: string | null;
  /** The AI agent that answers its conversations. */
  agent_id: Generated<string | null>;
  created_at: TsDefault;
  updated_at: TsDefault;
  deleted_at: Ts | null;
}

export interface ContactsTable {
  id: string;
  account_id: string;
  phone: string | null;
  socialchat_id: string | null;
  /** The Instagram username, when the social channel reported it (migrations/0014). */
  socialchat_username: Generated<string | null>;
  name: Generated<string>;
  attributes: JsonDefault<Record<string, string>>;
  opted_out: Generated<boolean>;
  marketing_opt_out: Generated<boolean>;
  created_at: TsDefault;
  updated_at: TsDefault;
  /** Set when the person was erased (migrations/0035): a tombstone, gone for every read and count. */
  erased_at: Generated<Date | null>;
}

/** An opt-out kept after its contact was erased (migrations/0036): the hash of account and phone, never the phone. */
export interface ContactSuppressionsTable {
  account_id: string;
  phone_hash: string;
  opted_out: boolean;
  marketing_opt_out: boolean;
  created_at: Ts;
}

export interface ContactFieldsTable {
  account_id: string;
  key: string;
  type: Generated<string>;
  created_at: TsDefault;
}

export interface TemplateVariable {
  name: string;
  label: string;
  example: string;
  /**
   * Where the WhatsApp Cloud API takes it: the body (absent), the header text, or the URL of
   * button number `button` (0-based). A named variable used in the header and in the body is
   * listed once for each; the API shows each name once.
   */
  component?: 'header' | 'button';
  button?: number;
}

export interface TemplatesTable {
  id: string;
  account_id: string;
  name: string;
  category: string;
  language: Generated<string>;
  body: string;
  variables: JsonDefault<TemplateVariable[]>;
  status: Generated<string>;
  external_id: string | null;
  created_at: TsDefault;
  updated_at: TsDefault;
  deleted_at: Ts | null;
}

export interface ConversationsTable {
  id: string;
  account_id: string;
  contact_id: string;
  phone_number_id: string | null;
  /** socialchat: the social account it happens on (migrations/0014). */
  social_account_id: Generated<string | null>;
  channel: Generated<string>;
  last_inbound_at: Ts | null;
  created_at: TsDefault;
  /** Who answers it now (decisions.md "Conversations": handling). */
  handling_type: 'automation' | 'agent' | 'team' | null;
  handling_id: string | null;
  handling_name: string | null;
  /** `team` lasts while this case stays open. */
  handling_case_id: string | null;
}

export interface CampaignsTable {
  id: string;
  account_id: string;
  name: string;
  status: Generated<string>;
  template_id: string | null;
  phone_number_id: string | null;
  variables: JsonDefault<Record<string, string>>;
  audience: JsonDefault<{ attributes?: Record<string, string> }>;
  recipients: Generated<number>;
  sent: Generated<number>;
  delivered: Generated<number>;
  read: Generated<number>;
  failed: Generated<number>;
  scheduled_at: Ts | null;
  started_at: Ts | null;
  completed_at: Ts | null;
  created_at: TsDefault;
  audience_cursor: string | null;
  audience_open: Generated<boolean>;
  audience_counted: Generated<number>;
  audience_read: Generated<number>;
}

export interface CampaignRecipientsTable {
  campaign_id: string;
  contact_id: string;
  phone: string;
  status: Generated<string>;
  message_id: string | null;
  error: string | null;
  updated_at: TsDefault;
  /** Sends tried so far (temporary refusals are tried again on CAMPAIGN_RETRY_SCHEDULE). */
  attempts: Generated<number>;
  /** A pending recipient waiting for its next try; null when it may go now. */
  retry_at: Date | null;
}

export interface MessagesTable {
  id: string;
  account_id: string;
  conversation_id: string;
  contact_id: string;
  phone_number_id: string | null;
  direction: 'outbound' | 'inbound';
  type: string;
  text: string | null;
  template_id: string | null;
  template_name: string | null;
  template_variables: Json<Record<string, string>> | null;
  to_phone: string | null;
  wamid: string | null;
  status: string;
  code: number | null;
  error: string | null;
  campaign_id: string | null;
  /** api | campaign | automation | agent | team | inbound | socialchat */
  source: Generated<string>;
  /** A team reply's author `{id, name}`; an automation's or agent's `{id, name}`. */
  sent_by: JsonDefault<Record<string, unknown> | null>;
  provider_timestamp: Ts | null;
  sent_at: Ts | null;
  delivered_at: Ts | null;
  read_at: Ts | null;
  failed_at: Ts | null;
  created_at: TsDefault;
  updated_at: TsDefault;
}

export interface EarlyStatusesTable {
  wamid: string;
  status: string;
  code: number | null;
  reported_at: Ts;
  created_at: TsDefault;
}

/** Status reports the sandbox scheduled (SANDBOX_AUTO_STATUS=on), due at `run_at`. */
export interface SandboxReportsTable {
  id: string;
  wamid: string;
  /** Our message id (migration 0020; null for reports scheduled before it). */
  message_id: string | null;
  status: string;
  code: number | null;
  reported_at: Ts;
  run_at: Ts;
  created_at: TsDefault;
}

export interface PipelinesTable {
  id: string;
  account_id: string;
  name: string;
  inactivity_hours: Generated<number>;
  stale_days: Generated<number>;
  is_default: Generated<boolean>;
  created_at: TsDefault;
}

export interface StagesTable {
  id: string;
  pipeline_id: string;
  name: string;
  kind: 'open' | 'won' | 'lost';
  position: number;
}

export interface CasesTable {
  id: string;
  /** Inbound messages of the case so far (classification runs after the first three). */
  inbound_count: Generated<number>;
  account_id: string;
  conversation_id: string;
  contact_id: string;
  pipeline_id: string | null;
  stage_id: string | null;
  stage_entered_at: Ts | null;
  stage_amount: Numeric | null;
  stage_fields: JsonDefault<Record<string, unknown>>;
  status: Generated<string>;
  opened_at: Ts;
  last_inbound_at: Ts;
  closed_at: Ts | null;
  close_reason: string | null;
  closed_by: Json<By> | null;
  reason_id: string | null;
  reason: string | null;
  subreason_id: string | null;
  subreason: string | null;
  reason_source: string | null;
  reason_status: Generated<string>;
  reason_confidence: number | null;
  reason_set_by: Json<By> | null;
  reason_set_at: Ts | null;
  handled_by: Generated<string>;
  agent_id: string | null;
  agent_name: string | null;
  handed_off_at: Ts | null;
  goal_at: Ts | null;
  inactivity_hours: Generated<number>;
  ad: Json<{ id: string; headline: string; sourceUrl: string }> | null;
  score: number | null;
  score_detail: Json<{ question: string; weight: number; probability: number }[]> | null;
  outcome: string | null;
  outcome_amount: Numeric | null;
  outcome_currency: string | null;
  outcome_note: string | null;
  outcome_source: string | null;
  outcome_by: Json<By> | null;
  outcome_at: Ts | null;
  outcome_external_id: string | null;
  created_at: TsDefault;
  updated_at: TsDefault;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  url: string;
  events: string[] | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Ts | null;
  enabled: Generated<boolean>;
  disabled_reason: string | null;
  failing_since: Ts | null;
  deleted_at: Ts | null;
  created_at: TsDefault;
  updated_at: TsDefault;
}

export interface EventsTable {
  id: string;
  account_id: string;
  kind: string;
  data: Json<Record<string, unknown>>;
  test: Generated<boolean>;
  created_at: TsDefault;
}

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  webhook_id: string;
  account_id: string;
  status: Generated<string>;
  skip_reason: string | null;
  attempts: Generated<number>;
  next_attempt_at: Ts | null;
  lease_until: Ts | null;
  last_attempt_at: Ts | null;
  last_status_code: number | null;
  /** scheduled | manual: how the next attempt is logged (migration 0003). */
  next_trigger: Generated<string>;
  /** Attempt count where the current retry schedule started (a redelivery restarts it). */
  schedule_start: Generated<number>;
  created_at: TsDefault;
  updated_at: TsDefault;
  tries: Generated<number>;
  failed_at: Date | null;
  last_error: string | null;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt_number: number;
  trigger: 'scheduled' | 'manual';
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
  created_at: TsDefault;
}

export interface UsageCountersTable {
  account_id: string;
  period_start: Ts;
  resource: string;
  count: ColumnType<string, number | string | undefined, number | string>;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  route: string;
  request_hash: string;
  state: Generated<string>;
  response_status: number | null;
  response_body: Json<unknown> | null;
  created_at: TsDefault;
}

export interface SettingsTable {
  key: string;
  value: string;
}

/** A flow (docs/automations.md); `trigger` and `steps` are validated by automations/flow.ts. */
export interface AutomationsTable {
  id: string;
  account_id: string;
  name: string;
  status: 'draft' | 'active' | 'paused';
  trigger: Json<Record<string, unknown>>;
  steps: Json<Record<string, unknown>[]>;
  phone_number_id: string | null;
  webhook_token: string | null;
  webhook_token_hash: string | null;
  /** Starts a minute this automation may take (null: the default, 600). */
  starts_per_minute: Generated<number | null>;
  created_at: TsDefault;
  updated_at: TsDefault;
  deleted_at: Ts | null;
}

export type ExecutionStatus = 'running' | 'completed' | 'handed_off' | 'failed' | 'cancelled';

export interface AutomationExecutionsTable {
  id: string;
  account_id: string;
  automation_id: string;
  conversation_id: string;
  contact_id: string;
  phone_number_id: string | null;
  status: ExecutionStatus;
  error: string | null;
  variables: JsonDefault<Record<string, unknown>>;
  current_step_id: string | null;
  /** ready: run the current step; asked: waiting for the answer; waiting: a wait step. */
  state: 'ready' | 'asked' | 'waiting';
  deadline_at: Ts | null;
  attempts: Generated<number>;
  inputs_pending: Generated<number>;
  effect_step: string | null;
  test: Generated<boolean>;
  trigger: string;
  /** A comment automation's execution: the comment its first send answers privately (then null). */
  reply_comment_id: Generated<string | null>;
  /** Our own http steps chained before it (the Chasqui-Hop the incoming webhook read; 0 otherwise). */
  hop: Generated<number>;
  run_at: Ts | null;
  claim: string | null;
  started_at: Ts;
  ended_at: Ts | null;
  updated_at: TsDefault;
  tries: Generated<number>;
  failed_at: Date | null;
  last_error: string | null;
}

export interface AutomationStepsTable {
  id: string;
  execution_id: string;
  step_id: string;
  type: string;
  started_at: Ts;
  ended_at: Ts | null;
  outcome: string | null;
  detail: JsonDefault<Record<string, unknown> | null>;
}

export interface AutomationInputsTable {
  seq: Generated<string>;
  execution_id: string;
  message_id: string;
  text: string | null;
  created_at: TsDefault;
}

export interface ConversationNotesTable {
  id: string;
  account_id: string;
  conversation_id: string;
  case_id: string | null;
  text: string;
  by: Json<{ type: string; id: string | null; name: string }>;
  created_at: TsDefault;
}

export interface MembersTable {
  id: string;
  account_id: string;
  email: string;
  name: string;
  role: 'owner' | 'admin' | 'agent';
  status: 'active' | 'invited' | 'disabled';
  password_hash: string | null;
  created_at: TsDefault;
  last_seen_at: Date | null;
}

export interface MemberInvitesTable {
  token_hash: string;
  member_id: string;
  expires_at: Ts;
  used_at: Date | null;
  created_at: TsDefault;
}

export interface MemberSessionsTable {
  token_hash: string;
  member_id: string;
  csrf: string;
  created_at: TsDefault;
  last_seen_at: TsDefault;
}

export interface AgentsTable {
  id: string;
  account_id: string;
  name: string;
  status: 'active' | 'paused';
  version: Generated<number>;
  instructions: Generated<string>;
  goal: Json<{ description: string; fields: { name: string; description: string; required: boolean }[] }> | null;
  handoff: JsonDefault<{ rules: string[]; phrases: string[] }>;
  review: Json<{
    criteria: { name: string; description: string; kind: 'pass_fail' | 'score' }[];
    extract: { name: string; description: string }[];
  }> | null;
  model: string | null;
  max_turns: Generated<number>;
  created_at: TsDefault;
  updated_at: TsDefault;
  deleted_at: Ts | null;
}

/** One turn of an agent's test conversation (operator POST …/agents/{agentId}/test). */
export interface AgentTestTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface AgentTestConversationsTable {
  id: string;
  account_id: string;
  agent_id: string;
  messages: JsonDefault<AgentTestTurn[]>;
  created_at: TsDefault;
  updated_at: TsDefault;
}

/** One stretch of an agent in a conversation (migrations/0012; docs/agents.md "Stretches"). */
export interface AgentStretchesTable {
  id: string;
  account_id: string;
  agent_id: string;
  agent_version: number;
  conversation_id: string;
  contact_id: string;
  phone_number_id: string | null;
  assigned_by: 'number' | 'automation';
  execution_id: string | null;
  test: Generated<boolean>;
  status: Generated<'running' | 'ended'>;
  ended_by: 'goal' | 'handoff' | 'idle' | null;
  summary: string | null;
  goal_data: Json<Record<string, string>> | null;
  since_id: string;
  until_id: string | null;
  answered_until: string | null;
  pending: Generated<boolean>;
  turns: Generated<number>;
  last_activity_at: Ts;
  run_at: Ts | null;
  claim: string | null;
  created_at: TsDefault;
  updated_at: TsDefault;
  ended_at: Ts | null;
  tries: Generated<number>;
  failed_at: Date | null;
  last_error: string | null;
}

/** What a turn decided (agents/prompt.ts interpretToolCalls, without the ignored calls). */
export interface TurnDecision {
  /** The messages the turn sends: the model's replies bounded (messages/text-limits.ts boundReplies). */
  replies: string[];
  goal: { data: Record<string, string>; summary: string } | null;
  handoff: { reason: string; summary: string } | null;
  /** Replies of the model not sent: past MAX_REPLIES_PER_TURN messages (absent on turns before it). */
  dropped?: number;
  /** A long reply's end did not fit in the turn's messages and was cut ("…"). */
  cut?: boolean;
}

export interface AgentTurnsTable {
  id: string;
  stretch_id: string;
  n: number;
  status: Generated<'calling' | 'decided' | 'done'>;
  inbound_until: string;
  tool_calls: Json<{ name: string; arguments: Record<string, unknown> }[]> | null;
  outcome: Json<TurnDecision> | null;
  replies_started: Generated<number>;
  message_ids: JsonDefault<string[]>;
  error: string | null;
  started_at: Ts;
  ended_at: Ts | null;
}

export interface ReviewCriterionResult {
  name: string;
  result: 'success' | 'failure' | 'unknown' | null;
  score: number | null;
}

export interface AgentReviewsTable {
  id: string;
  account_id: string;
  agent_id: string;
  agent_version: number;
  stretch_id: string;
  conversation_id: string;
  contact_id: string;
  ended_by: 'goal' | 'handoff' | 'idle';
  status: Generated<'pending' | 'done' | 'failed'>;
  summary: string | null;
  criteria: Json<ReviewCriterionResult[]> | null;
  extracted: Json<Record<string, string | null>> | null;
  error: string | null;
  runs: Generated<number>;
  run_at: Ts | null;
  claim: string | null;
  created_at: TsDefault;
  updated_at: TsDefault;
  reviewed_at: Ts | null;
}

/** An Instagram comment that reached us (migrations/0015; docs/instagram.md "Comments"). */
export interface SocialCommentsTable {
  id: string;
  account_id: string;
  social_account_id: string;
  comment_id: string;
  contact_id: string;
  conversation_id: string;
  media_id: string | null;
  text: string | null;
  execution_id: string | null;
  created_at: TsDefault;
}

/** An AI app connected through MCP (migrations/0013, 0030; docs/mcp.md): an etk_app_ token, or an OAuth client's consent. */
export interface AiAppsTable {
  id: string;
  account_id: string;
  name: string;
  token_hash: string | null;
  prefix: string | null;
  oauth_client_id: string | null;
  created_at: TsDefault;
  revoked_at: Ts | null;
  last_used_at: Ts | null;
}

/** The OAuth server's models (migrations/0030; src/oauth/adapter.ts), keyed by the SHA-256 of their id. */
export interface OauthModelsTable {
  kind: string;
  id_hash: string;
  payload: Json<Record<string, unknown>>;
  grant_id: string | null;
  uid: string | null;
  expires_at: Ts | null;
  consumed_at: Ts | null;
}

export interface OauthKeysTable {
  name: string;
  value: Json<unknown>;
  created_at: TsDefault;
}

export interface ReasonKeywords {
  id: string;
  name: string;
  keywords: string[];
}

export interface ReasonsTable {
  id: string;
  account_id: string;
  name: string;
  keywords: JsonDefault<string[]>;
  subreasons: JsonDefault<ReasonKeywords[]>;
  scoring: Json<{ questions: { question: string; weight: number; keywords: string[] }[] }> | null;
  created_at: TsDefault;
  updated_at: TsDefault;
  deleted_at: Ts | null;
}

export interface CaseClassificationsTable {
  id: string;
  case_id: string;
  message_id: string;
  nth: number;
  run_at: Ts;
  attempts: Generated<number>;
  created_at: TsDefault;
  failed_at: Date | null;
  last_error: string | null;
  dead_at: Date | null;
  /** The token of the claim in force (migrations/0026): the worker's writes check it. */
  claim: Generated<string | null>;
}

/** A parked item of a durable queue (migrations/0019_dead_letters.sql). */
export interface DeadLettersTable {
  id: string;
  queue: string;
  item_id: string;
  account_id: string | null;
  first_failed_at: Date;
  attempts: number;
  last_error: string;
  died_at: Date;
}

export interface InboundQueueTable {
  id: Generated<string>;
  channel: string;
  body: string;
  numbers: string[];
  wabas: string[];
  keys: string[];
  received_at: Ts;
  run_at: Ts;
  attempts: Generated<number>;
  claim: string | null;
  failed_at: Date | null;
  last_error: string | null;
  dead_at: Date | null;
}

export interface InboundQueueKeysTable {
  key: string;
  queue_id: string;
}

/** The audit trail (migrations/0032; src/audit/trail.ts): append-only, one row per security-relevant action. */
export interface AuditLogTable {
  id: string;
  account_id: string | null;
  at: Ts;
  actor_type: 'operator' | 'member' | 'api_key' | 'ai_app' | 'system';
  actor_id: string | null;
  actor_name: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  request_id: string | null;
  ip: string | null;
  changes: Json<Record<string, unknown>>;
}

export interface Database {
  audit_log: AuditLogTable;
  members: MembersTable;
  member_invites: MemberInvitesTable;
  member_sessions: MemberSessionsTable;
  inbound_queue: InboundQueueTable;
  dead_letters: DeadLettersTable;
  inbound_queue_keys: InboundQueueKeysTable;
  agents: AgentsTable;
  agent_test_conversations: AgentTestConversationsTable;
  agent_stretches: AgentStretchesTable;
  agent_turns: AgentTurnsTable;
  agent_reviews: AgentReviewsTable;
  ai_apps: AiAppsTable;
  oauth_models: OauthModelsTable;
  oauth_keys: OauthKeysTable;
  social_comments: SocialCommentsTable;
  reasons: ReasonsTable;
  case_classifications: CaseClassificationsTable;
  automations: AutomationsTable;
  automation_executions: AutomationExecutionsTable;
  automation_steps: AutomationStepsTable;
  automation_inputs: AutomationInputsTable;
  conversation_notes: ConversationNotesTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  phone_numbers: PhoneNumbersTable;
  social_accounts: SocialAccountsTable;
  contacts: ContactsTable;
  contact_fields: ContactFieldsTable;
  contact_suppressions: ContactSuppressionsTable;
  templates: TemplatesTable;
  conversations: ConversationsTable;
  campaigns: CampaignsTable;
  campaign_recipients: CampaignRecipientsTable;
  messages: MessagesTable;
  early_statuses: EarlyStatusesTable;
  sandbox_reports: SandboxReportsTable;
  pipelines: PipelinesTable;
  stages: StagesTable;
  cases: CasesTable;
  webhooks: WebhooksTable;
  events: EventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  usage_counters: UsageCountersTable;
  idempotency_keys: IdempotencyKeysTable;
  settings: SettingsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type MemberRow = Selectable<MembersTable>;
export type PhoneNumberRow = Selectable<PhoneNumbersTable>;
export type SocialAccountRow = Selectable<SocialAccountsTable>;
export type ContactRow = Selectable<ContactsTable>;
export type TemplateRow = Selectable<TemplatesTable>;
export type ConversationRow = Selectable<ConversationsTable>;
export type CampaignRow = Selectable<CampaignsTable>;
export type MessageRow = Selectable<MessagesTable>;
export type PipelineRow = Selectable<PipelinesTable>;
export type StageRow = Selectable<StagesTable>;
export type CaseRow = Selectable<CasesTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AutomationRow = Selectable<AutomationsTable>;
export type ExecutionRow = Selectable<AutomationExecutionsTable>;
export type StepLogRow = Selectable<AutomationStepsTable>;
export type NoteRow = Selectable<ConversationNotesTable>;
export type AgentRow = Selectable<AgentsTable>;
export type StretchRow = Selectable<AgentStretchesTable>;
export type TurnRow = Selectable<AgentTurnsTable>;
export type ReviewRow = Selectable<AgentReviewsTable>;
export type ReasonRow = Selectable<ReasonsTable>;
export type CaseUpdate = Updateable<CasesTable>;
