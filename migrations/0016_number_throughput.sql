-- A number's throughput tier (docs/performance.md "Throughput tiers and pacing"): the messages per
-- second Meta lets it send (80 by default, up to 1,000 for upgraded numbers). Every send on the
-- number is paced under it (limits/pacer.ts); the operator sets it (PATCH …/phone-numbers/{pnId}).
ALTER TABLE phone_numbers
  ADD COLUMN throughput_per_second integer NOT NULL DEFAULT 80
  CONSTRAINT phone_numbers_throughput_range CHECK (throughput_per_second BETWEEN 1 AND 1000);
