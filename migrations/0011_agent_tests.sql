-- An agent's test conversations (docs/operator.md "POST …/agents/{agentId}/test"): the operator's
-- turns with the agent, kept so a later test turn can continue them. Nothing is sent or emitted.
CREATE TABLE agent_test_conversations (
  id          uuid PRIMARY KEY,
  account_id  uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  agent_id    uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  messages    jsonb NOT NULL DEFAULT '[]'::jsonb,   -- [{role: user | assistant, content}]
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_test_conversations_agent ON agent_test_conversations (agent_id);
