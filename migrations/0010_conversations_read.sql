-- A conversation handled by the team shows the team member's id, which is the app's own id (any
-- text, like a case's `by.id`), not one of ours: handling_id holds text.
ALTER TABLE conversations ALTER COLUMN handling_id TYPE text;

-- GET /api/v1/conversations lists an account's conversations in id order.
CREATE INDEX conversations_account_id ON conversations (account_id, id);
