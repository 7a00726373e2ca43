-- Webhook dispatcher (issue 4). A manual redelivery logs its attempt as `manual` and restarts the
-- retry schedule, so each delivery keeps the trigger of its next attempt and the attempt number
-- where its current schedule started.
ALTER TABLE webhook_deliveries ADD COLUMN next_trigger text NOT NULL DEFAULT 'scheduled';
ALTER TABLE webhook_deliveries ADD COLUMN schedule_start integer NOT NULL DEFAULT 0;
-- The dispatcher's claim: due pending deliveries in next_attempt_at order (the existing partial
-- index), joined to their URL; the log lists a URL's deliveries newest first (existing index).
