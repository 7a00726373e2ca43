-- Campaign sending (issue 2): the audience is fixed when sending starts, one row per recipient,
-- so the `campaigns` job sends in batches, survives restarts and never sends twice.
CREATE TABLE campaign_recipients (
  campaign_id  uuid NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  contact_id   uuid NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  phone        text NOT NULL,
  status       text NOT NULL DEFAULT 'pending',     -- pending | sending | sent | failed | skipped
  message_id   uuid,
  error        text,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (campaign_id, contact_id)
);
CREATE INDEX campaign_recipients_pending ON campaign_recipients (campaign_id) WHERE status = 'pending';

-- Due scheduled campaigns and campaigns still sending.
CREATE INDEX campaigns_active ON campaigns (scheduled_at) WHERE status IN ('scheduled', 'sending');

-- case-timeouts: open-stage cases by last customer message (the stale rule).
CREATE INDEX cases_stage_last_inbound ON cases (stage_id, last_inbound_at) WHERE stage_id IS NOT NULL AND outcome IS NULL;
