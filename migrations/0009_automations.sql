-- Automations (docs/automations.md): flows, their executions, the step log, and the inbound
-- messages a running execution has not read yet. Everything that waits is a row with a `run_at`,
-- claimed with FOR UPDATE SKIP LOCKED (docs/architecture.md "Automations").
CREATE TABLE automations (
  id                  uuid PRIMARY KEY,
  account_id          uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name                text NOT NULL,
  status              text NOT NULL DEFAULT 'draft',   -- draft | active | paused
  trigger             jsonb NOT NULL,
  steps               jsonb NOT NULL,
  phone_number_id     uuid REFERENCES phone_numbers(id) ON DELETE SET NULL,
  webhook_token       text,                            -- the incoming webhook's secret (trigger webhook)
  webhook_token_hash  text,                            -- SHA-256 hex of it: the lookup key
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  deleted_at          timestamptz
);
CREATE INDEX automations_account ON automations (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX automations_webhook_token ON automations (webhook_token_hash) WHERE webhook_token_hash IS NOT NULL;

CREATE TABLE automation_executions (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  automation_id    uuid NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
  conversation_id  uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  contact_id       uuid NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  phone_number_id  uuid REFERENCES phone_numbers(id) ON DELETE SET NULL,
  status           text NOT NULL DEFAULT 'running',    -- running | completed | handed_off | failed | cancelled
  error            text,
  variables        jsonb NOT NULL DEFAULT '{}'::jsonb,
  current_step_id  text,
  -- Where the execution is inside its current step: ready (run it), asked (the question went
  -- out; waiting for the answer until deadline_at), waiting (a wait step until deadline_at).
  state            text NOT NULL DEFAULT 'ready',
  deadline_at      timestamptz,
  attempts         integer NOT NULL DEFAULT 0,         -- answers of an ask step that matched no option
  inputs_pending   integer NOT NULL DEFAULT 0,         -- automation_inputs rows not read yet
  -- The step log row of a send or http step whose outbound effect started and has not been
  -- recorded as finished: found set by a new claim, the execution fails ("interrumpida").
  effect_step      uuid,
  test             boolean NOT NULL DEFAULT false,
  trigger          text NOT NULL,                      -- keyword | first_message | api | webhook | comment | test
  -- Due: when a runner should look at it; while claimed, when the claim lapses. null once ended.
  run_at           timestamptz,
  claim            uuid,                               -- the runner's claim; each write checks it
  started_at       timestamptz NOT NULL,
  ended_at         timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX automation_executions_one_running ON automation_executions (conversation_id) WHERE status = 'running';
CREATE INDEX automation_executions_due ON automation_executions (run_at) WHERE status = 'running';
CREATE INDEX automation_executions_automation ON automation_executions (automation_id, id DESC);

-- The step log: one row per step run. A `send` or `http` row is written (started) before the
-- outbound effect and finished after it, so a row left unfinished by a crash is recognised.
CREATE TABLE automation_steps (
  id            uuid PRIMARY KEY,
  execution_id  uuid NOT NULL REFERENCES automation_executions(id) ON DELETE CASCADE,
  step_id       text NOT NULL,
  type          text NOT NULL,
  started_at    timestamptz NOT NULL,
  ended_at      timestamptz,
  outcome       text,                                  -- ok | then | else | error | timeout | retry | failed | interrupted | …
  detail        jsonb
);
CREATE INDEX automation_steps_execution ON automation_steps (execution_id, id);

-- Inbound messages that arrived while the conversation had a running execution: its input, in
-- arrival order, until an `ask` step reads them (they are never a trigger).
CREATE TABLE automation_inputs (
  seq           bigserial PRIMARY KEY,
  execution_id  uuid NOT NULL REFERENCES automation_executions(id) ON DELETE CASCADE,
  message_id    uuid NOT NULL,
  text          text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX automation_inputs_execution ON automation_inputs (execution_id, seq);

-- Who is answering a conversation (decisions.md "Conversations": handling). `team` lasts while
-- the case that was open when the team took over stays open (handling_case_id).
ALTER TABLE conversations
  ADD COLUMN handling_type     text,                   -- automation | agent | team | null
  ADD COLUMN handling_id       text,                   -- an automation's or agent's id, or the app's team member id (any text)
  ADD COLUMN handling_name     text,
  ADD COLUMN handling_case_id  uuid;

-- GET /api/v1/conversations lists an account's conversations in id order.
CREATE INDEX conversations_account_id ON conversations (account_id, id);

-- Internal notes for the team (a handoff's note; later an agent's summary).
CREATE TABLE conversation_notes (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  conversation_id  uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  case_id          uuid,
  text             text NOT NULL,
  by               jsonb NOT NULL,                     -- {type: automation | agent | team, id, name}
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_notes_conversation ON conversation_notes (conversation_id, id);

-- Outbound messages say who sent them (decisions.md "Conversations": `from` is the source; a
-- team reply also keeps its author).
ALTER TABLE messages ADD COLUMN sent_by jsonb;
CREATE INDEX messages_conversation_id ON messages (conversation_id, id);
