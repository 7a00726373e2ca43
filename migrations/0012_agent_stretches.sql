-- AI agents at work (docs/agents.md "Stretches"): one row per stretch of an agent in a
-- conversation, its model turns (each a stored step: the model's answer is kept before any reply
-- goes out, and each reply is recorded as started in the transaction that stores its message),
-- and the reviews of advanced agents. Everything that waits is a row with a `run_at`, claimed
-- with SKIP LOCKED.
CREATE TABLE agent_stretches (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id         uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  agent_version    integer NOT NULL,
  conversation_id  uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  contact_id       uuid NOT NULL,
  phone_number_id  uuid,
  -- number: the phone number's agent; automation: an automation's `agent` step (execution_id)
  assigned_by      text NOT NULL,
  execution_id     uuid,
  test             boolean NOT NULL DEFAULT false,
  status           text NOT NULL DEFAULT 'running',   -- running | ended
  ended_by         text,                              -- goal | handoff | idle
  summary          text,
  goal_data        jsonb,
  -- The conversation's messages from this id on are the stretch's (what each turn shows the
  -- model; UUIDv7: ids grow with time): the inbound message that started it, or the one that
  -- started the automation whose `agent` step assigned it.
  since_id         uuid NOT NULL,
  -- The conversation's newest message when it ended (a review reads since_id … until_id).
  until_id         uuid,
  -- The newest inbound message a finished turn answered (UUIDv7: ids grow with time).
  answered_until   uuid,
  -- Set by every inbound message; a claim clears it: a turn is due again when it is set on release.
  pending          boolean NOT NULL DEFAULT false,
  turns            integer NOT NULL DEFAULT 0,
  last_activity_at timestamptz NOT NULL,
  run_at           timestamptz,                       -- due (a turn, or the idle check); while claimed, the lease's end
  claim            uuid,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  ended_at         timestamptz
);
CREATE UNIQUE INDEX agent_stretches_running ON agent_stretches (conversation_id) WHERE status = 'running';
CREATE INDEX agent_stretches_due ON agent_stretches (run_at) WHERE status = 'running';
CREATE INDEX agent_stretches_agent ON agent_stretches (agent_id, created_at);

-- One model turn: `calling` until the model's answer is stored (`decided`: tool_calls and the
-- outcome), `done` once its replies and effects are written. `replies_started` counts the replies
-- whose message is stored (each is sent at most once: a crash never repeats one).
CREATE TABLE agent_turns (
  id               uuid PRIMARY KEY,
  stretch_id       uuid NOT NULL REFERENCES agent_stretches(id) ON DELETE CASCADE,
  n                integer NOT NULL,
  status           text NOT NULL DEFAULT 'calling',   -- calling | decided | done
  inbound_until    uuid NOT NULL,                     -- the newest inbound message this turn answers
  tool_calls       jsonb,
  outcome          jsonb,                             -- {replies, goal, handoff}
  replies_started  integer NOT NULL DEFAULT 0,
  message_ids      jsonb NOT NULL DEFAULT '[]'::jsonb,
  error            text,
  started_at       timestamptz NOT NULL,
  ended_at         timestamptz
);
CREATE INDEX agent_turns_stretch ON agent_turns (stretch_id, n);

-- The review of an advanced agent's stretch (agents.md "Review"): queued when the stretch ends,
-- run by a worker (pending → done | failed), re-runnable.
CREATE TABLE agent_reviews (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id         uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  agent_version    integer NOT NULL,
  stretch_id       uuid NOT NULL REFERENCES agent_stretches(id) ON DELETE CASCADE,
  conversation_id  uuid NOT NULL,
  contact_id       uuid NOT NULL,
  ended_by         text NOT NULL,
  status           text NOT NULL DEFAULT 'pending',   -- pending | done | failed
  summary          text,
  criteria         jsonb,
  extracted        jsonb,
  error            text,
  runs             integer NOT NULL DEFAULT 0,
  run_at           timestamptz,
  claim            uuid,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  reviewed_at      timestamptz
);
CREATE INDEX agent_reviews_due ON agent_reviews (run_at) WHERE run_at IS NOT NULL;
CREATE INDEX agent_reviews_agent ON agent_reviews (agent_id, created_at DESC, id DESC);
