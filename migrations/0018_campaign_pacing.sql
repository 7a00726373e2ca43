-- Campaigns send at their number's tier (docs/performance.md "Campaigns"): the audience is read from
-- contacts in slices as sending goes instead of being copied when it starts, so a campaign of
-- 100,000 contacts sends its first message at once. A recipient row is made when its contact's
-- turn comes (status `sending`, with its message), or `pending` again to be tried later.
ALTER TABLE campaigns ADD COLUMN audience_cursor uuid;                       -- the last contact (by id) read
ALTER TABLE campaigns ADD COLUMN audience_open boolean NOT NULL DEFAULT false; -- contacts remain to read
ALTER TABLE campaigns ADD COLUMN audience_counted integer NOT NULL DEFAULT 0;  -- members counted at start
ALTER TABLE campaigns ADD COLUMN audience_read integer NOT NULL DEFAULT 0;     -- members read so far
