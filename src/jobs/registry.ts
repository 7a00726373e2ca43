// Periodic jobs (operator.md: POST /admin/v1/jobs/{name}/run). Each returns how many rows it
// changed. The scheduler runs them on their own period; one runner per cluster (advisory lock).
import { runReviews } from '../agents/reviews.js';
import { purgeAuditLines } from '../audit/log.js';
import { runCampaigns } from '../campaigns/sender.js';
import { runCaseTimeouts } from '../cases/timeouts.js';
import { applyDueSandboxReports } from '../channel/sandbox/provider.js';
import { runClassifications } from '../classification/queue.js';
import { runContactImports } from '../contacts/import.js';
import { purgeIdempotencyKeys } from '../http/idempotency.js';
import { failSendsInDoubt } from '../messages/reconcile.js';
import { purgeEarlyStatuses } from '../messages/status.js';
import { purgeExpired } from '../oauth/adapter.js';
import { webhooksJob } from '../webhooks/job.js';
import type { Job } from './types.js';

export const jobs: Record<string, Job> = {
  // Every process runs its own automation runner (it polls every 250 ms); this runs what is due
  // now to the end — the operator's and the tests' way to fire timers after moving the clock.
  automations: { everyMs: 60_000, run: (s) => s.automations.runOnce() },
  // Every process runs its own agent runner too (agents/runner.ts); this runs every turn due now
  // (messages to answer, idle checks) to the end.
  agents: { everyMs: 60_000, run: (s) => s.agents.runOnce() },
  webhooks: webhooksJob,
  // Every process runs its own inbound worker (channel/inbound-queue.ts, 250 ms); this processes
  // every queued webhook batch due now — the tests' way to wait for what a receipt queued.
  inbound: { everyMs: 60_000, run: (s) => s.inbound.runOnce() },
  // Inactivity closing and stale → lost (cases/timeouts.ts); also drops early status reports
  // older than 7 days (messages/status.ts). `changed` counts only the cases.
  'case-timeouts': {
    everyMs: 60_000,
    run: async (s) => {
      await purgeEarlyStatuses(s);
      return runCaseTimeouts(s);
    },
  },
  // Classifies cases after their first three inbound messages (classification/queue.ts); the
  // inbound path also wakes it in-process after its commit. `changed` counts the rows done.
  classification: { everyMs: 250, run: runClassifications },
  // Reviews the ended stretches of advanced agents (agents/reviews.ts); the stretch engine also
  // wakes it in-process after the commit that queued one. `changed` counts the rows handled.
  'agent-reviews': { everyMs: 1_000, run: runReviews },
  // Starts due campaigns, sends a paced batch, completes finished ones (campaigns/sender.ts).
  campaigns: { everyMs: 2_000, run: runCampaigns },
  // Deletes Idempotency-Key rows past their 24 hours (http/idempotency.ts).
  'idempotency-keys': { everyMs: 3_600_000, run: purgeIdempotencyKeys },
  // Applies the sandbox's scheduled status reports once due (channel/sandbox/provider.ts).
  'sandbox-statuses': { everyMs: 250, run: applyDueSandboxReports },
  // Fails the sends still `pending` without any provider answer 24 h after they started
  // (messages/reconcile.ts). `changed` counts the messages failed.
  'reconcile-sends': { everyMs: 300_000, run: failSendsInDoubt },
  // Imports the contact CSV imports started (contacts/import.ts); the start also runs it at once.
  // `changed` counts the contacts written.
  'contact-imports': { everyMs: 1_000, run: runContactImports },
  // Deletes the authorization server's codes, tokens, sessions and interactions past their expiry
  // (oauth/adapter.ts). `changed` counts the rows deleted.
  oauth: { everyMs: 3_600_000, run: (s) => purgeExpired(s.db, s.clock.now()) },
  // Deletes the audit lines older than AUDIT_RETENTION_DAYS, in batches (audit/log.ts). `changed`
  // counts the lines deleted.
  audit: { everyMs: 3_600_000, run: purgeAuditLines },
};
