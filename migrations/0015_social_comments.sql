-- Instagram comments (docs/instagram.md "Comments"): a comment starts the matching `comment`
-- automation and is kept here for Meta's re-sends (one row per comment id); it is not a message
-- of the conversation (no message.received). The execution it starts answers it once with a
-- private reply: `reply_comment_id` until its first send.
CREATE TABLE social_comments (
  id                 uuid PRIMARY KEY,
  account_id         uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  social_account_id  uuid NOT NULL REFERENCES social_accounts(id),
  comment_id         text NOT NULL UNIQUE,
  contact_id         uuid NOT NULL,
  conversation_id    uuid NOT NULL,
  media_id           text,
  text               text,
  execution_id       uuid,
  created_at         timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE automation_executions ADD COLUMN reply_comment_id text;
