-- Members of an account and their console sessions (issue 26, docs/console.md).
-- email: lower-cased by the service; unique across the server (one account per email).
-- password_hash: 'scrypt$N$r$p$salt$hash' (base64url), null while the member is invited.
CREATE TABLE members (
  id            uuid PRIMARY KEY,
  account_id    uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  email         text NOT NULL,
  name          text NOT NULL,
  role          text NOT NULL CHECK (role IN ('owner', 'admin', 'agent')),
  status        text NOT NULL CHECK (status IN ('active', 'invited', 'disabled')),
  password_hash text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz
);
CREATE UNIQUE INDEX members_email ON members (lower(email));
CREATE INDEX members_account ON members (account_id, created_at);

-- One-use invite links: only the sha256 of the token is stored.
CREATE TABLE member_invites (
  token_hash  text PRIMARY KEY,
  member_id   uuid NOT NULL REFERENCES members(id) ON DELETE CASCADE,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX member_invites_member ON member_invites (member_id);

-- Console sessions: the cookie's sha256 (the cookie itself is never stored), its CSRF token,
-- 12 h idle / 14 days absolute (checked by the service against created_at / last_seen_at).
CREATE TABLE member_sessions (
  token_hash    text PRIMARY KEY,
  member_id     uuid NOT NULL REFERENCES members(id) ON DELETE CASCADE,
  csrf          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX member_sessions_member ON member_sessions (member_id);
