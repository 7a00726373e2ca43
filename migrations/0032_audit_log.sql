-- The audit trail (docs/privacy.md "Audit trail"; src/audit/trail.ts): one append-only row per
-- security-relevant action, written in the transaction of the action itself. No foreign key to
-- accounts: the trail outlives what it names. Never a secret, never message text in `changes`.
CREATE TABLE audit_log (
  id text PRIMARY KEY,
  account_id text,
  at timestamptz NOT NULL,
  actor_type text NOT NULL CHECK (actor_type IN ('operator', 'member', 'api_key', 'ai_app', 'system')),
  actor_id text,
  actor_name text,
  action text NOT NULL,
  target_type text,
  target_id text,
  request_id text,
  ip text,
  changes jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_account_at ON audit_log (account_id, at DESC, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);

-- Append-only: a line is never changed. Retention (the `audit` job) deletes whole old lines.
CREATE FUNCTION audit_log_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only';
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_frozen();
