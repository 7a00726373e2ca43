-- AI agents and case classification (docs/agents.md): the agents, the reasons catalogue, and the
-- classification work the inbound path queues (a row with a `run_at`, claimed with SKIP LOCKED).
CREATE TABLE agents (
  id            uuid PRIMARY KEY,
  account_id    uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name          text NOT NULL,
  status        text NOT NULL DEFAULT 'paused',      -- active | paused
  version       integer NOT NULL DEFAULT 1,          -- +1 on every change of what the agent does
  instructions  text NOT NULL DEFAULT '',
  goal          jsonb,                               -- {description, fields: [{name, description, required}]}
  handoff       jsonb NOT NULL DEFAULT '{"rules": [], "phrases": []}'::jsonb,
  review        jsonb,                               -- present: an advanced agent
  model         text,
  max_turns     integer NOT NULL DEFAULT 30,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz
);
CREATE INDEX agents_account ON agents (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

-- The account's catalogue of reasons why customers write (operator API).
CREATE TABLE reasons (
  id           uuid PRIMARY KEY,
  account_id   uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name         text NOT NULL,
  keywords     jsonb NOT NULL DEFAULT '[]'::jsonb,   -- [string]
  subreasons   jsonb NOT NULL DEFAULT '[]'::jsonb,   -- [{id, name, keywords}]
  scoring      jsonb,                                -- {questions: [{question, weight, keywords}]} | null
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  deleted_at   timestamptz
);
CREATE INDEX reasons_account ON reasons (account_id, created_at, id) WHERE deleted_at IS NULL;

-- A case to classify after one of its first three inbound messages (while reasonStatus is pending).
CREATE TABLE case_classifications (
  id          uuid PRIMARY KEY,
  case_id     uuid NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  message_id  uuid NOT NULL,
  nth         integer NOT NULL,                      -- 1, 2 or 3: the case's inbound message number
  run_at      timestamptz NOT NULL,                  -- due; while claimed, when the claim lapses
  attempts    integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX case_classifications_due ON case_classifications (run_at);

ALTER TABLE cases ADD COLUMN inbound_count integer NOT NULL DEFAULT 0;
ALTER TABLE phone_numbers ADD COLUMN agent_id uuid REFERENCES agents(id) ON DELETE SET NULL;
