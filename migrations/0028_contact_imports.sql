-- Contact CSV imports (issue 27; docs/operator.md "Contact imports"): the uploaded file is checked
-- row by row (state previewed), then imported in the background once started (queued → running →
-- done | failed), claimed by the contact-imports job with FOR UPDATE SKIP LOCKED and a lease.
-- csv: the uploaded text, kept only until the import ends (null afterwards: no copy of the
-- customers' data stays behind). processed_rows: data records handled so far, in file order, so a
-- run taken over after a lease lapsed goes on where the last committed batch ended.
CREATE TABLE contact_imports (
  id              uuid PRIMARY KEY,
  account_id      uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  state           text NOT NULL CHECK (state IN ('previewed', 'queued', 'running', 'done', 'failed')),
  csv             text,
  columns         jsonb NOT NULL,
  preview         jsonb NOT NULL,
  total_rows      integer NOT NULL,
  valid_rows      integer NOT NULL,
  processed_rows  integer NOT NULL DEFAULT 0,
  created_count   integer NOT NULL DEFAULT 0,
  updated_count   integer NOT NULL DEFAULT 0,
  failed_count    integer NOT NULL DEFAULT 0,
  error           text,
  run_at          timestamptz,
  locked_until    timestamptz,
  created_at      timestamptz NOT NULL,
  started_at      timestamptz,
  finished_at     timestamptz
);
CREATE INDEX contact_imports_account ON contact_imports (account_id, id);
CREATE INDEX contact_imports_due ON contact_imports (run_at) WHERE state IN ('queued', 'running');

-- Every row that fails, with its problems [{column, value, reason}]: found by the preview, and by
-- the import itself when something changed since (the plan's contact limit, a contact's attributes).
CREATE TABLE contact_import_failures (
  import_id   uuid NOT NULL REFERENCES contact_imports(id) ON DELETE CASCADE,
  row_number  integer NOT NULL,
  problems    jsonb NOT NULL,
  PRIMARY KEY (import_id, row_number)
);
