-- Campaign sends refused for a temporary reason (provider down, rate limited, timeout) are tried
-- again on CAMPAIGN_RETRY_SCHEDULE before they count as failed (docs/decisions.md "Campaigns").
ALTER TABLE campaign_recipients ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE campaign_recipients ADD COLUMN retry_at timestamptz;
