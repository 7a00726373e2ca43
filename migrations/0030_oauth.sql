-- OAuth 2.1 for AI apps (docs/mcp.md "Connecting with OAuth"): the authorization server's state
-- (oidc-provider's models: clients, grants, interactions, sessions, codes, access and refresh
-- tokens) in one table shared by every process, keyed by the SHA-256 of the model's id so the
-- database never holds a usable token or code; its signing and cookie keys in another. A
-- connected AI app is either the operator's (an etk_app_ token) or an OAuth client's consent.
CREATE TABLE oauth_models (
  kind         text NOT NULL,               -- the oidc-provider model: AccessToken, Grant, Client, …
  id_hash      text NOT NULL,               -- sha256 of its id (tokens and codes are their ids)
  payload      jsonb NOT NULL,
  grant_id     text,                        -- tokens and codes of one grant go together
  uid          text,                        -- sessions are also found by uid
  expires_at   timestamptz,
  consumed_at  timestamptz,
  PRIMARY KEY (kind, id_hash)
);
CREATE INDEX oauth_models_grant ON oauth_models (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_models_uid ON oauth_models (uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_models_expiry ON oauth_models (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE oauth_keys (
  name        text PRIMARY KEY,             -- 'jwks' (signing), 'cookies' (signed cookie keys)
  value       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE ai_apps ALTER COLUMN token_hash DROP NOT NULL;
ALTER TABLE ai_apps ALTER COLUMN prefix DROP NOT NULL;
ALTER TABLE ai_apps ADD COLUMN oauth_client_id text;
CREATE UNIQUE INDEX ai_apps_oauth_client ON ai_apps (account_id, oauth_client_id)
  WHERE revoked_at IS NULL AND oauth_client_id IS NOT NULL;
