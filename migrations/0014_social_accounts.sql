-- Social accounts (docs/operator.md "Social accounts"; spec social.md): what a phone number is to
-- WhatsApp, a social account is to the social channel (Instagram Direct). Secrets stay in their
-- columns and never leave the service's view nor the logs.
CREATE TABLE social_accounts (
  id            uuid PRIMARY KEY,
  account_id    uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name          text NOT NULL,
  provider      text NOT NULL,                        -- sandbox | instagram
  status        text NOT NULL DEFAULT 'connected',    -- connected | disconnected
  ig_user_id    text,                                 -- instagram: our Instagram professional account id (recipient.id, entry[].id)
  access_token  text,
  app_secret    text,
  verify_token  text,
  agent_id      uuid REFERENCES agents(id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz                           -- DELETE: gone from the lists, secrets cleared, conversations kept
);
CREATE INDEX social_accounts_account ON social_accounts (account_id, created_at, id) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX social_accounts_ig_user ON social_accounts (ig_user_id) WHERE provider = 'instagram' AND deleted_at IS NULL;

-- A social conversation is one contact on one social account. WhatsApp conversations keep their
-- key (contact, number, no social account). A deleted social account keeps its row (deleted_at),
-- so its conversations keep their key and their history.
ALTER TABLE conversations ADD COLUMN social_account_id uuid REFERENCES social_accounts(id);
DROP INDEX conversations_contact_number;
CREATE UNIQUE INDEX conversations_contact_number
  ON conversations (account_id, contact_id, channel, phone_number_id, social_account_id) NULLS NOT DISTINCT;

-- The Instagram username of a contact first seen there (the contact view's socialchat.username).
ALTER TABLE contacts ADD COLUMN socialchat_username text;
