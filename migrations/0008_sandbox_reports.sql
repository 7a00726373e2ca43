-- Status reports the sandbox schedules with SANDBOX_AUTO_STATUS=on (delivered, read, a test
-- number's failure). Rows rather than timers: they survive a restart, several processes share
-- them, and they follow the service's clock. The `sandbox-statuses` job applies the due ones.
CREATE TABLE sandbox_reports (
  id           uuid PRIMARY KEY,
  wamid        text NOT NULL,
  status       text NOT NULL,                 -- delivered | read | failed
  code         integer,                       -- provider code (with failed)
  reported_at  timestamptz NOT NULL,          -- when the sandbox says it happened
  run_at       timestamptz NOT NULL,          -- due; while claimed, when the claim lapses
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_reports_due ON sandbox_reports (run_at);
