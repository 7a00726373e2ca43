-- The claim token of a queued classification (issue 25), as the inbound queue has: set by each
-- claim, and every write of the worker that holds it (the classification, the row's deletion, a
-- failure, the dead letter) checks it, so a late worker whose lease lapsed and whose row was
-- claimed again writes nothing.
ALTER TABLE case_classifications ADD COLUMN claim uuid;
