// Webhook subscriptions and their delivery log (operator.md "Webhooks"; decisions.md).
import { sql } from 'kysely';
import { type AuditWho, audit, fromTo } from '../audit/trail.js';
import type { Db, Executor } from '../db/index.js';
import type { AccountRow, DeliveryRow, WebhookRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { iso } from '../http/schemas.js';
import { forgetDeath } from '../jobs/dead-letters.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, suggestPlan } from '../limits/plans.js';
import { openOrNull } from '../secrets/keyring.js';
import type { Services } from '../services.js';
import { parkDeliveries } from './delivery-repo.js';
import { emitEvent } from './outbox.js';
import { newSecret } from './signing.js';
import { assertPublicUrl, parseWebhookUrl } from './ssrf.js';

/** The old secret keeps signing this long after a rotation (decisions.md). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export const webhookView = (w: WebhookRow) => ({
  id: w.id,
  url: w.url,
  events: w.events,
  enabled: w.enabled,
  disabledReason: w.disabled_reason,
  createdAt: w.created_at.toISOString(),
});

/** What a webhook's audit line may show: the URL's host (never its path or query, which may carry a token) and the events. */
const auditable = (w: { url: string; events: string[] | null; enabled?: boolean }) => ({
  host: new URL(w.url).host,
  events: w.events,
  ...(w.enabled !== undefined ? { enabled: w.enabled } : {}),
});
const target = (id: string) => ({ type: 'webhook', id });

/** Validates a URL for registration: http(s), and public unless private addresses are allowed. */
async function checkUrl(s: Services, raw: string): Promise<string> {
  const u = parseWebhookUrl(raw);
  if (!s.config.allowPrivateWebhooks) await assertPublicUrl(u);
  return u.toString();
}

export async function createWebhook(
  s: Services,
  account: AccountRow,
  input: { url: string; events?: string[] | null | undefined },
  who: AuditWho,
) {
  const url = await checkUrl(s, input.url);
  const limits = effectiveLimits(account.plan, account.limits);
  const now = s.clock.now();
  return s.db.transaction().execute(async (trx) => {
    // Serialise creations per account so two concurrent ones cannot both pass the maximum.
    await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
    const { n } = await trx
      .selectFrom('webhooks')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('account_id', '=', account.id)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (limits.webhookUrls !== null && n >= limits.webhookUrls) {
      throw new ApiError('webhook_limit', {
        params: { limit: limits.webhookUrls },
        cause: {
          type: 'upgrade',
          reason: 'limit',
          resource: 'webhookUrls',
          plan: account.plan,
          limit: limits.webhookUrls,
          used: n,
          suggested: suggestPlan('webhookUrls', n),
        },
      });
    }
    const secret = newSecret();
    const row = await trx
      .insertInto('webhooks')
      .values({
        id: newId(),
        account_id: account.id,
        url,
        events: input.events?.length ? [...new Set(input.events)] : null,
        secret: s.secrets.seal(secret, 'webhooks.secret'),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await audit(trx, now, who, { accountId: account.id, action: 'webhook.created', target: target(row.id), changes: auditable(row) });
    // The secret is shown here once; it is stored sealed (docs/privacy.md "Secrets sealed at rest").
    return { ...webhookView(row), secret };
  });
}

export async function getWebhook(db: Executor, accountId: string, id: string): Promise<WebhookRow> {
  const w = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!w) throw new ApiError('webhook_not_found');
  return w;
}

export async function listWebhooks(db: Executor, accountId: string) {
  const rows = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map(webhookView);
}

/**
 * PATCH {url?, events?, enabled?}. Re-enabling a disabled URL replays what it did not get:
 * deliveries still pending, and those that failed since the URL started failing.
 */
export async function updateWebhook(
  s: Services,
  accountId: string,
  id: string,
  input: { url?: string | undefined; events?: string[] | null | undefined; enabled?: boolean | undefined },
  who: AuditWho,
) {
  const url = input.url === undefined ? undefined : await checkUrl(s, input.url);
  const now = s.clock.now();
  const out = await s.db.transaction().execute(async (trx) => {
    const w = await getWebhook(trx, accountId, id);
    const reenable = input.enabled === true && !w.enabled;
    if (reenable) {
      await sql`
        UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}, next_trigger = 'manual',
          schedule_start = attempts, lease_until = NULL, updated_at = ${now}
        WHERE webhook_id = ${w.id} AND (status = 'pending'
          OR (status = 'failed' AND ${w.failing_since}::timestamptz IS NOT NULL AND last_attempt_at >= ${w.failing_since}::timestamptz))`.execute(
        trx,
      );
    }
    const next = await trx
      .updateTable('webhooks')
      .set({
        ...(url !== undefined ? { url } : {}),
        ...(input.events !== undefined ? { events: input.events?.length ? [...new Set(input.events)] : null } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled, disabled_reason: input.enabled ? null : 'manual' } : {}),
        ...(reenable ? { failing_since: null } : {}),
        updated_at: now,
      })
      .where('id', '=', w.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    // Disabled: what it has pending waits, parked, for a re-enable.
    if (input.enabled === false && w.enabled) await parkDeliveries(sql`${w.id}::uuid`, now).execute(trx);
    const changes = fromTo(auditable(w), auditable(next), ['host', 'events', 'enabled']);
    await audit(trx, now, who, { accountId, action: 'webhook.updated', target: target(w.id), changes });
    return next;
  });
  if (input.enabled) s.dispatcher.wake();
  return webhookView(out);
}

export async function deleteWebhook(s: Services, accountId: string, id: string, who: AuditWho): Promise<void> {
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    const w = await getWebhook(trx, accountId, id);
    await trx.updateTable('webhooks').set({ deleted_at: now, enabled: false }).where('id', '=', w.id).execute();
    await parkDeliveries(sql`${w.id}::uuid`, now).execute(trx);
    await audit(trx, now, who, { accountId, action: 'webhook.deleted', target: target(w.id), changes: auditable(w) });
  });
}

/** New secret; the previous one keeps signing (a second signature) for 24 h. */
export async function rotateSecret(s: Services, accountId: string, id: string, who: AuditWho): Promise<{ secret: string }> {
  const now = s.clock.now();
  const secret = newSecret();
  await s.db.transaction().execute(async (trx) => {
    const w = await getWebhook(trx, accountId, id);
    // Sealed anew for its own column (the place is bound into the value); one sealed by a key not in
    // the ring cannot sign any more, so it is not kept.
    const previous = openOrNull(s.secrets, w.secret, 'webhooks.secret');
    const previousUntil = previous === null ? null : new Date(now.getTime() + ROTATION_OVERLAP_MS);
    await trx
      .updateTable('webhooks')
      .set({
        secret: s.secrets.seal(secret, 'webhooks.secret'),
        previous_secret: s.secrets.sealNullable(previous, 'webhooks.previous_secret'),
        previous_secret_expires_at: previousUntil,
        updated_at: now,
      })
      .where('id', '=', w.id)
      .execute();
    const changes = { previousSecretUntil: previousUntil?.toISOString() ?? null };
    await audit(trx, now, who, { accountId, action: 'webhook.secret_rotated', target: target(w.id), changes });
  });
  return { secret };
}

/** The test event (api.md §6): a `message.received` with sample data and `test: true`, to this URL only. */
export async function sendTestEvent(s: Services, accountId: string, id: string): Promise<{ eventId: string }> {
  const w = await getWebhook(s.db, accountId, id);
  const now = s.clock.now();
  const eventId = await s.db.transaction().execute((trx) =>
    emitEvent(
      trx,
      {
        accountId,
        kind: 'message.received',
        test: true,
        webhookId: w.id,
        data: {
          id: '00000000-0000-7000-8000-000000000000',
          wamid: 'wamid.TEST',
          conversationId: '00000000-0000-7000-8000-000000000001',
          to: '5491100000000',
          contact: { id: '00000000-0000-7000-8000-000000000002', name: 'Cliente de prueba', phone: '5491155550000' },
          type: 'text',
          text: 'Mensaje de prueba de Chasqui',
          timestamp: now.toISOString(),
        },
      },
      now,
    ),
  );
  s.dispatcher.wake();
  return { eventId };
}

type DeliveryListRow = DeliveryRow & { kind: string };

export const deliveryView = (d: DeliveryListRow) => ({
  id: d.id,
  eventId: d.event_id,
  event: d.kind,
  status: d.status,
  skipReason: d.skip_reason,
  attempts: d.attempts,
  lastAttemptAt: iso(d.last_attempt_at),
  nextAttemptAt: d.status === 'pending' ? iso(d.next_attempt_at) : null,
  lastStatusCode: d.last_status_code,
  createdAt: d.created_at.toISOString(),
});

const deliveries = (db: Executor) =>
  db.selectFrom('webhook_deliveries as d').innerJoin('events as e', 'e.id', 'd.event_id').selectAll('d').select('e.kind');

/** The URL's deliveries, newest first; `after` is the last id of the previous page. */
export async function listDeliveries(db: Db, accountId: string, webhookId: string, q: { limit: number; after?: string | undefined }) {
  await getWebhook(db, accountId, webhookId);
  let query = deliveries(db).where('d.webhook_id', '=', webhookId);
  if (q.after) query = query.where('d.id', '<', q.after);
  const rows = await query
    .orderBy('d.id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const hasMore = rows.length > q.limit;
  const data = (hasMore ? rows.slice(0, q.limit) : rows).map(deliveryView);
  return { data, hasMore, nextCursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}

async function getDelivery(db: Executor, accountId: string, webhookId: string, id: string): Promise<DeliveryListRow> {
  await getWebhook(db, accountId, webhookId);
  const d = await deliveries(db).where('d.id', '=', id).where('d.webhook_id', '=', webhookId).executeTakeFirst();
  if (!d) throw new ApiError('delivery_not_found');
  return d;
}

/** One delivery with every attempt (decisions.md: number, trigger, status code, duration, excerpt, error). */
export async function deliveryDetail(db: Db, accountId: string, webhookId: string, id: string) {
  const d = await getDelivery(db, accountId, webhookId, id);
  const attempts = await db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', d.id).orderBy('attempt_number').execute();
  return {
    ...deliveryView(d),
    attemptLog: attempts.map((a) => ({
      attempt: a.attempt_number,
      trigger: a.trigger,
      statusCode: a.status_code,
      durationMs: a.duration_ms,
      responseExcerpt: a.response_excerpt,
      error: a.error,
      at: a.created_at.toISOString(),
    })),
  };
}

/** Queues a manual attempt now (its retry schedule starts over). Skipped deliveries are never sent. */
export async function redeliver(s: Services, accountId: string, webhookId: string, id: string): Promise<void> {
  const d = await getDelivery(s.db, accountId, webhookId, id);
  if (d.status === 'skipped') throw new ApiError('delivery_skipped');
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    // Our own failures count afresh; a dead one is no longer a dead letter.
    await sql`
      UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}, next_trigger = 'manual',
        schedule_start = attempts, lease_until = NULL, tries = 0, failed_at = NULL, last_error = NULL, updated_at = ${now}
      WHERE id = ${d.id}`.execute(trx);
    if (d.status === 'dead') await forgetDeath(trx, 'webhook_deliveries', d.id);
  });
  s.dispatcher.wake();
}
