// The `webhooks` job (operator.md: POST /admin/v1/jobs/webhooks/run): one dispatcher pass now
// (everything due is attempted and recorded before it answers), and expired rotation secrets go.
import { sql } from 'kysely';
import type { Job } from '../jobs/types.js';

export const webhooksJob: Job = {
  // The dispatcher polls on its own every POLL_MS; this is the safety net and the manual trigger.
  everyMs: 60_000,
  async run(s) {
    await sql`UPDATE webhooks SET previous_secret = NULL, previous_secret_expires_at = NULL
      WHERE previous_secret_expires_at <= ${s.clock.now()}`.execute(s.db);
    return s.dispatcher.runOnce();
  },
};
