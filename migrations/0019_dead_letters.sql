-- Dead letters (docs/operating.md "Dead letters"): every durable queue tries an item a bounded
-- number of times for our own failures (QUEUE_RETRY_SCHEDULE), then parks it as dead, kept with its
-- error and listed here, so nothing is held forever and nothing is dropped in silence.
--
-- Each queue counts the claims of an item that made no progress (`attempts` / `tries`: a crash
-- mid-item counts too, since the claim is counted before the work), remembers when it first failed
-- and the last error (without personal data), and parks it:
--   inbound_queue         dead_at set, its ordering keys removed (it no longer holds its customers)
--   case_classifications  dead_at set (it no longer holds the case's later messages)
--   webhook_deliveries    status 'dead'
--   automation_executions ended 'failed' (automation.failed), the conversation freed
--   agent_stretches       ended by a hand-off to the team
-- and writes one row in dead_letters, whose id the operator API retries or discards.
ALTER TABLE inbound_queue ADD COLUMN failed_at timestamptz;
ALTER TABLE inbound_queue ADD COLUMN last_error text;
ALTER TABLE inbound_queue ADD COLUMN dead_at timestamptz;

ALTER TABLE case_classifications ADD COLUMN failed_at timestamptz;
ALTER TABLE case_classifications ADD COLUMN last_error text;
ALTER TABLE case_classifications ADD COLUMN dead_at timestamptz;

ALTER TABLE webhook_deliveries ADD COLUMN tries integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_deliveries ADD COLUMN failed_at timestamptz;
ALTER TABLE webhook_deliveries ADD COLUMN last_error text;

ALTER TABLE automation_executions ADD COLUMN tries integer NOT NULL DEFAULT 0;
ALTER TABLE automation_executions ADD COLUMN failed_at timestamptz;
ALTER TABLE automation_executions ADD COLUMN last_error text;

ALTER TABLE agent_stretches ADD COLUMN tries integer NOT NULL DEFAULT 0;
ALTER TABLE agent_stretches ADD COLUMN failed_at timestamptz;
ALTER TABLE agent_stretches ADD COLUMN last_error text;

CREATE TABLE dead_letters (
  id               uuid PRIMARY KEY,
  -- inbound | webhook_deliveries | executions | agent_turns | classification
  queue            text NOT NULL,
  -- The item's id in its queue's table (inbound_queue ids are numbers, the others UUIDs).
  item_id          text NOT NULL,
  account_id       uuid,
  first_failed_at  timestamptz NOT NULL,
  attempts         integer NOT NULL,
  last_error       text NOT NULL,
  died_at          timestamptz NOT NULL,
  UNIQUE (queue, item_id)
);
CREATE INDEX dead_letters_list ON dead_letters (queue, id);
