-- Reconciliation of sends in doubt (docs/cloud.md "Reconciliation", docs/operating.md "Sends in
-- doubt"). A send is stored `pending` before the provider call; if the process dies before the
-- wamid is stored, the first status report carrying our message id (Cloud: Meta's echo of
-- `biz_opaque_callback_data`; sandbox: the scheduled report's message_id) stores it.

-- The sandbox's scheduled reports carry our message id too, as Meta's statuses do.
ALTER TABLE sandbox_reports ADD COLUMN message_id uuid;

-- The `reconcile-sends` job: messages still `pending` 24 h after their send, oldest first. The
-- pending set is tiny (a send leaves it within seconds), so the index is too.
CREATE INDEX messages_pending ON messages (created_at) WHERE status = 'pending';
