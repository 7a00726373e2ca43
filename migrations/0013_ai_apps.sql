-- AI apps connected to an account through MCP (docs/mcp.md "Connected AI apps"): the token is
-- shown once and kept only as its SHA-256; a disconnected app keeps its row (revoked_at) so what
-- it did stays attributable.
CREATE TABLE ai_apps (
  id          uuid PRIMARY KEY,
  account_id  uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name        text NOT NULL,
  token_hash  text NOT NULL UNIQUE,
  prefix      text NOT NULL,                        -- etk_app_ + 4 characters, to tell tokens apart
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX ai_apps_account ON ai_apps (account_id, created_at) WHERE revoked_at IS NULL;
