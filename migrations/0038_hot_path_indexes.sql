-- Reads of the inbound path and its queues that visited rows in proportion to a table instead of
-- to their own input (docs/performance.md "Reads in proportion to their input"):
--   * the latest ad of a contact's earlier cases, read when a known contact opens a case, filtered
--     every case of every account (cases has no index by contact; only cases with an ad matter);
--   * the inbound queue's claim walked the dead batches kept at its head (oldest ids first);
--   * the classification queue's claim walked its dead rows (their run_at stays old), and its
--     "oldest row of the case" check read the whole queue (no index by case).
CREATE INDEX cases_contact_ad ON cases (contact_id, opened_at DESC, id DESC) WHERE ad IS NOT NULL;

CREATE INDEX inbound_queue_live ON inbound_queue (id) WHERE dead_at IS NULL;

DROP INDEX case_classifications_due;
CREATE INDEX case_classifications_due ON case_classifications (run_at) WHERE dead_at IS NULL;
CREATE INDEX case_classifications_case ON case_classifications (case_id, nth, id);
