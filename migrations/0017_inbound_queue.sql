-- Meta's webhook batches, acknowledged at once (docs/cloud.md "Inbound: acknowledged at once"):
-- the receiver verifies the signature, stores the raw batch here in one insert and answers 200;
-- each process's inbound worker claims rows (FOR UPDATE SKIP LOCKED, a lease in `run_at`) and
-- runs them through the inbound path, then deletes them. `keys` are the batch's ordering keys
-- (one per customer of a number, one per WABA for template updates), also one row each in
-- `inbound_queue_keys`: a batch is claimed only when no earlier batch (lower id) still queued
-- shares a key, so one customer's messages keep their receipt order. That check is one btree probe
-- per key ((key, queue_id) < this id), cheap with thousands of batches of one customer queued (an
-- array overlap through a GIN index fetched every batch of the key: 55-130 ms per claim).
CREATE TABLE inbound_queue (
  id           bigserial PRIMARY KEY,
  channel      text NOT NULL,
  body         text NOT NULL,
  -- What the signature verified at receipt: the Graph phone-number ids and WABA ids of ours.
  numbers      text[] NOT NULL DEFAULT '{}',
  wabas        text[] NOT NULL DEFAULT '{}',
  keys         text[] NOT NULL DEFAULT '{}',
  received_at  timestamptz NOT NULL,
  run_at       timestamptz NOT NULL,
  attempts     integer NOT NULL DEFAULT 0,
  claim        uuid
);

CREATE INDEX inbound_queue_run_at ON inbound_queue (run_at);

-- Written in the receipt's one INSERT statement (a CTE), gone with the batch.
CREATE TABLE inbound_queue_keys (
  key       text NOT NULL,
  queue_id  bigint NOT NULL REFERENCES inbound_queue(id) ON DELETE CASCADE,
  PRIMARY KEY (key, queue_id)
);
CREATE INDEX inbound_queue_keys_queue ON inbound_queue_keys (queue_id);
