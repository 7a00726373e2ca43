-- Erasure of one person (docs/privacy.md "Erasure and export of one person"; src/contacts/erasure.ts).
-- An erased contact stays as a tombstone — no phone, no social user, no name, no attributes —
-- because its messages, cases and campaign recipients keep their ids, times and statuses for the
-- counts, and they reference it. erased_at set: the contact is gone for every read and count.
ALTER TABLE contacts ADD COLUMN erased_at timestamptz;

-- What an erasure reads by conversation or contact (otherwise a scan of the whole table each time).
CREATE INDEX cases_conversation ON cases (conversation_id);
CREATE INDEX automation_executions_conversation ON automation_executions (conversation_id);
CREATE INDEX agent_stretches_conversation ON agent_stretches (conversation_id);
CREATE INDEX campaign_recipients_contact ON campaign_recipients (contact_id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
