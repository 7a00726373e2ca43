// Contacts (api.md §2 "Contact", §4 POST /contacts): one per account and canonical phone.
import { sql } from 'kysely';
import type { Executor, Trx } from '../db/index.js';
import type { AccountRow, ContactRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { page } from '../http/schemas.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, suggestPlan } from '../limits/plans.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { type AttributePatch, assertAttributeRoom, mergePatch, rememberFields } from './attributes.js';

export interface ContactView {
  id: string;
  phone: string | null;
  name: string;
  attributes: Record<string, string>;
  optedOut: boolean;
  marketingOptOut: boolean;
  createdAt: string;
  updatedAt: string;
  /** The social-channel user, when the contact wrote there; null otherwise. */
  socialchat: { id: string; username: string | null } | null;
}

export function contactView(c: ContactRow): ContactView {
  return {
    id: c.id,
    phone: c.phone,
    name: c.name,
    attributes: c.attributes,
    optedOut: c.opted_out,
    marketingOptOut: c.marketing_opt_out,
    createdAt: c.created_at.toISOString(),
    updatedAt: c.updated_at.toISOString(),
    socialchat: c.socialchat_id ? { id: c.socialchat_id, username: c.socialchat_username } : null,
  };
}

export async function getContact(db: Executor, accountId: string, id: string): Promise<ContactRow> {
  const row = await db
    .selectFrom('contacts')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('erased_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new ApiError('contact_not_found');
  return row;
}

/**
 * Checks the plan's contact limit before creating one more (api.md §7: 402 only when creating).
 * Locks the account row so concurrent creations cannot pass the limit together (NO KEY UPDATE:
 * inserts elsewhere that reference the account, which take KEY SHARE, are not blocked).
 */
export async function assertContactRoom(trx: Trx, account: AccountRow): Promise<void> {
  const limit = effectiveLimits(account.plan, account.limits).contacts;
  if (limit === null) return;
  await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR NO KEY UPDATE`.execute(trx);
  const { n } = await trx
    .selectFrom('contacts')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('account_id', '=', account.id)
    .where('erased_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (n >= limit) {
    throw new ApiError('contact_limit', {
      params: { limit },
      cause: {
        type: 'upgrade',
        reason: 'limit',
        resource: 'contacts',
        plan: account.plan,
        limit,
        used: n,
        suggested: suggestPlan('contacts', n, true, account.plan),
      },
    });
  }
}

export interface UpsertInput {
  phone: string;
  name?: string;
  attributes?: AttributePatch;
}

/**
 * Creates or updates by canonical phone inside `trx`: attributes merged (only sent keys change,
 * null removes one), name replaced only when sent. `created` tells 201 from 200. Locks, in order:
 * the contact row, the account row (only when creating under a contact limit), the fields lock.
 */
export async function upsertContact(
  trx: Trx,
  account: AccountRow,
  input: UpsertInput,
  now: Date,
): Promise<{ contact: ContactRow; created: boolean }> {
  const patch = input.attributes ?? {};
  const lockByPhone = () =>
    trx
      .selectFrom('contacts')
      .selectAll()
      .where('account_id', '=', account.id)
      .where('phone', '=', input.phone)
      .forUpdate()
      .executeTakeFirst();
  let existing = await lockByPhone();
  let inserted: ContactRow | undefined;
  if (!existing) {
    try {
      await assertContactRoom(trx, account);
    } catch (err) {
      // At the limit, a concurrent request may have just created this phone: then it is an
      // update (200), not a creation (402 applies only when creating, api.md §4).
      if (!(err instanceof ApiError && err.code === 'contact_limit')) throw err;
      existing = await lockByPhone();
      if (!existing) throw err;
    }
  }
  if (!existing) {
    inserted = await insertContact(trx, account.id, input, patch, now);
    // A concurrent request created the same phone since our read: update it instead.
    if (!inserted) existing = await lockByPhone();
    if (!inserted && !existing) throw new Error('contact vanished after a conflicting insert');
  }
  const contact = inserted ?? (await updateContact(trx, existing!, input, patch, now));
  const setKeys = Object.keys(patch).filter((k) => patch[k] !== null);
  await rememberFields(trx, account.id, setKeys, now);
  return { contact, created: inserted !== undefined };
}

const insertContact = (trx: Trx, accountId: string, input: UpsertInput, patch: AttributePatch, now: Date) =>
  trx
    .insertInto('contacts')
    .values({
      id: newId(),
      account_id: accountId,
      phone: input.phone,
      name: input.name ?? '',
      attributes: sql`jsonb_strip_nulls(${JSON.stringify(patch)}::jsonb)`,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['account_id', 'phone']).where('phone', 'is not', null).doNothing())
    .returningAll()
    .executeTakeFirst();

function updateContact(
  trx: Trx,
  existing: ContactRow,
  input: { name?: string | undefined },
  patch: AttributePatch,
  now: Date,
): Promise<ContactRow> {
  assertAttributeRoom(existing.attributes, patch);
  return trx
    .updateTable('contacts')
    .set({
      ...(input.name !== undefined ? { name: input.name } : {}),
      attributes: mergePatch(patch),
      updated_at: now,
    })
    .where('id', '=', existing.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The contact a send goes to: existing, or created silently (no contact.created) under the
 * contact limit (api.md §4 POST /messages). `created` tells whether this call made it. Either way
 * the contact row is locked first (docs/architecture.md "Lock order").
 */
export async function contactForSend(
  trx: Trx,
  account: AccountRow,
  phone: string,
  now: Date,
): Promise<{ contact: ContactRow; created: boolean }> {
  const existing = await trx
    .selectFrom('contacts')
    .selectAll()
    .where('account_id', '=', account.id)
    .where('phone', '=', phone)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (existing) return { contact: existing, created: false };
  await assertContactRoom(trx, account);
  const row = await trx
    .insertInto('contacts')
    .values({ id: newId(), account_id: account.id, phone, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['account_id', 'phone']).where('phone', 'is not', null).doUpdateSet({ updated_at: now }))
    .returningAll()
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .executeTakeFirstOrThrow();
  const { inserted, ...contact } = row;
  return { contact, created: inserted };
}

/**
 * contactForSend as CTEs of a send's one statement (messages/send.ts): `send_contact`, one row or
 * none, with the contact's columns and `inserted`. The contact by phone, locked FOR NO KEY UPDATE
 * first (docs/architecture.md "Lock order"); else, when `create`, inserted silently (no
 * contact.created). The caller passes `create` false when the account has a contact limit and has
 * not yet taken the account's lock (assertContactRoom), and when the send would be refused anyway.
 * A concurrent first send to the same phone is absorbed by the unique index (its row, locked).
 */
export const sendContactCtes = (accountId: string, phone: string, now: Date, create: boolean) => sql`
  send_contact_found AS (
    SELECT * FROM contacts WHERE account_id = ${accountId} AND phone = ${phone} FOR NO KEY UPDATE
  ),
  send_contact_new AS (
    INSERT INTO contacts (id, account_id, phone, created_at, updated_at)
    SELECT ${newId()}::uuid, ${accountId}::uuid, ${phone}::text, ${now}::timestamptz, ${now}::timestamptz
    WHERE ${create}::boolean AND NOT EXISTS (SELECT 1 FROM send_contact_found)
    ON CONFLICT (account_id, phone) WHERE phone IS NOT NULL DO UPDATE SET updated_at = ${now}::timestamptz
    RETURNING *, (xmax = 0) AS inserted
  ),
  send_contact AS (
    SELECT *, false AS inserted FROM send_contact_found UNION ALL SELECT * FROM send_contact_new
  )`;

/**
 * The contact who wrote (the inbound path): found by phone (or social user), else created
 * (`created` true), and locked first (docs/architecture.md "Lock order"). A concurrent first
 * message of the same person is absorbed by the unique index. A customer who writes is never
 * refused: the plan's contact limit does not apply here.
 */
export async function contactForInbound(
  trx: Trx,
  accountId: string,
  key: { phone: string } | { socialchat: string },
  now: Date,
): Promise<{ contact: ContactRow; created: boolean }> {
  const find = () => {
    const q = trx.selectFrom('contacts').selectAll().where('account_id', '=', accountId);
    // NO KEY UPDATE: it excludes the other writers of this contact, not the inserts elsewhere that
    // only reference it (a campaign's audience takes KEY SHARE).
    return ('phone' in key ? q.where('phone', '=', key.phone) : q.where('socialchat_id', '=', key.socialchat))
      .forNoKeyUpdate()
      .executeTakeFirst();
  };
  const existing = await find();
  if (existing) return { contact: existing, created: false };
  const inserted = await trx
    .insertInto('contacts')
    .values({
      id: newId(),
      account_id: accountId,
      phone: 'phone' in key ? key.phone : null,
      socialchat_id: 'socialchat' in key ? key.socialchat : null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { contact: inserted, created: true };
  const raced = await find();
  if (!raced) throw new Error('inbound contact vanished after a conflicting insert');
  return { contact: raced, created: false };
}

/** The social channel's username as last reported (usernames change; the user id does not). */
export async function fillSocialUsername(trx: Trx, contact: ContactRow, username: string | undefined, now: Date): Promise<ContactRow> {
  const u = username?.trim().slice(0, 200);
  if (!u || contact.socialchat_username === u) return contact;
  return trx
    .updateTable('contacts')
    .set({ socialchat_username: u, updated_at: now })
    .where('id', '=', contact.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The channel's profile name fills an empty name; a name the business set is kept. */
export async function fillProfileName(trx: Trx, contact: ContactRow, profileName: string | undefined, now: Date): Promise<ContactRow> {
  const name = profileName?.trim();
  if (!name || contact.name !== '') return contact;
  return trx
    .updateTable('contacts')
    .set({ name: name.slice(0, 120), updated_at: now })
    .where('id', '=', contact.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The contacts unsubscribed (api.md §3 "Contact opt-out"): no more sends to them. */
export async function markOptedOut(trx: Trx, contactIds: string[], now: Date): Promise<Map<string, ContactRow>> {
  const { rows } = await sql<ContactRow>`
    UPDATE contacts SET opted_out = true, updated_at = ${now} WHERE id = ANY (${contactIds}::uuid[]) RETURNING *`.execute(trx);
  return new Map(rows.map((c) => [c.id, c]));
}

/** A customer of an inbound round: their key, and the name and username the channel reports (trimmed, bounded). */
export interface InboundContactKey {
  /** `p:<phone>` or `s:<socialchat id>`. */
  customer: string;
  key: { phone: string } | { socialchat: string };
  profileName: string | undefined;
  username: string | undefined;
}

/**
 * An inbound round's contacts by customer (`p:<phone>` or `s:<socialchat id>`), locked (NO KEY UPDATE: it excludes the other writers of the
 * contact, not the inserts elsewhere that only reference it): the existing ones read and locked and
 * the missing ones created with the channel's profile name, in one statement; then an empty name
 * filled by the profile name (a name the business set is kept) and the social channel's username
 * as last reported, only when one changes.
 */
export async function contactsForInbound(
  trx: Trx,
  accountId: string,
  items: InboundContactKey[],
  now: Date,
): Promise<Map<string, { contact: ContactRow; created: boolean }>> {
  const customerOf = (c: ContactRow) => (c.phone !== null ? `p:${c.phone}` : `s:${c.socialchat_id}`);
  const found = new Map<string, { contact: ContactRow; created: boolean }>();
  const lockOrCreate = async (list: InboundContactKey[]) => {
    const phones = list.map((i) => ('phone' in i.key ? i.key.phone : null));
    const socials = list.map((i) => ('socialchat' in i.key ? i.key.socialchat : null));
    // The existing ones by the arrays themselves, not by `IN (SELECT … FROM u)`: the planner then
    // reads the two unique indexes (a BitmapOr), where an OR of two subqueries filtered every
    // contact of the account — 20 ms a round at 50,000 contacts (docs/performance.md).
    const { rows } = await sql<ContactRow & { created: boolean }>`
      WITH u AS (
        SELECT * FROM unnest(${list.map(() => newId())}::uuid[], ${phones}::text[], ${socials}::text[],
          ${list.map((i) => i.profileName ?? '')}::text[], ${list.map((i) => i.username ?? null)}::text[])
          AS u(id, phone, social, name, username)),
      locked AS (
        SELECT c.* FROM contacts c
        WHERE c.account_id = ${accountId}
          AND (c.phone = ANY (${phones}::text[]) OR c.socialchat_id = ANY (${socials}::text[]))
        ORDER BY c.id FOR NO KEY UPDATE),
      ins AS (
        INSERT INTO contacts (id, account_id, phone, socialchat_id, name, socialchat_username, created_at, updated_at)
        SELECT u.id, ${accountId}, u.phone, u.social, u.name, u.username, ${now}, ${now} FROM u
        WHERE NOT EXISTS (SELECT 1 FROM locked l WHERE l.phone = u.phone OR l.socialchat_id = u.social)
        ORDER BY u.id
        ON CONFLICT DO NOTHING
        RETURNING *)
      SELECT *, false AS created FROM locked
      UNION ALL
      SELECT *, true AS created FROM ins`.execute(trx);
    for (const { created, ...c } of rows) found.set(customerOf(c), { contact: c, created });
  };
  await lockOrCreate(items);
  // Created meanwhile by another writer (after this statement's snapshot): read and locked now.
  const raced = items.filter((i) => !found.has(i.customer));
  if (raced.length > 0) await lockOrCreate(raced);
  if (items.some((i) => !found.has(i.customer))) throw new Error('inbound contact vanished after a conflicting insert');

  // An empty name takes the profile name; a changed username is kept.
  const fill = items.filter((i) => {
    const f = found.get(i.customer)!;
    if (f.created) return false;
    const name = i.profileName;
    const username = i.username;
    return (name !== undefined && f.contact.name === '') || (username !== undefined && f.contact.socialchat_username !== username);
  });
  if (fill.length > 0) {
    const { rows } = await sql<ContactRow>`
      UPDATE contacts c SET
        name = CASE WHEN c.name = '' AND u.name IS NOT NULL THEN u.name ELSE c.name END,
        socialchat_username = COALESCE(u.username, c.socialchat_username),
        updated_at = ${now}
      FROM unnest(${fill.map((i) => found.get(i.customer)!.contact.id)}::uuid[], ${fill.map((i) => i.profileName ?? null)}::text[],
        ${fill.map((i) => i.username ?? null)}::text[]) AS u(id, name, username)
      WHERE c.id = u.id
      RETURNING c.*`.execute(trx);
    for (const c of rows) found.set(customerOf(c), { contact: c, created: false });
  }
  return found;
}

/**
 * Locks a contact before the rows that hang from it (docs/architecture.md "Lock order"): NO KEY
 * UPDATE excludes its other writers, not the inserts elsewhere that only reference it.
 */
export async function lockContact(trx: Trx, contactId: string): Promise<void> {
  await trx.selectFrom('contacts').select('id').where('id', '=', contactId).forNoKeyUpdate().execute();
}

/** Provider code 131050: the contact stopped accepting marketing (decisions.md "Channel"). */
export async function markMarketingOptOut(trx: Trx, contactId: string, now: Date): Promise<void> {
  await trx
    .updateTable('contacts')
    .set({ marketing_opt_out: true, updated_at: now })
    .where('id', '=', contactId)
    .where('marketing_opt_out', '=', false)
    .execute();
}

/**
 * POST /contacts (api.md §4): create or update by canonical phone; a new contact emits
 * `contact.created` with source `api` in the same transaction (outbox).
 */
export async function saveContactFromApi(
  s: Services,
  account: AccountRow,
  input: UpsertInput,
): Promise<{ contact: ContactView; created: boolean }> {
  const now = s.clock.now();
  const { contact, created } = await s.db.transaction().execute(async (trx) => {
    const r = await upsertContact(trx, account, input, now);
    if (r.created) {
      await emitEvent(
        trx,
        { accountId: account.id, kind: 'contact.created', data: { source: 'api', contact: contactView(r.contact) } },
        now,
      );
    }
    return r;
  });
  if (created) {
    s.dispatcher.wake();
    // GET /me counts the account's contacts.
    s.accountViews.changed(account.id);
  }
  return { contact: contactView(contact), created };
}

/**
 * One page of the account's contacts in creation order (UUIDv7 ids), after the cursor id; with
 * `q`, only those whose name contains it (any case) or whose phone contains its digits.
 */
export async function listContacts(
  db: Executor,
  accountId: string,
  q: { limit: number; after?: string | undefined; q?: string | undefined },
) {
  let query = db.selectFrom('contacts').selectAll().where('account_id', '=', accountId).where('erased_at', 'is', null);
  if (q.after) query = query.where('id', '>', q.after);
  const text = q.q?.trim();
  if (text) {
    const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const digits = text.replace(/\D/g, '');
    query = query.where((eb) =>
      eb.or([
        eb('name', 'ilike', like),
        ...(digits.length >= 3 && /^[+\d\s().-]+$/.test(text) ? [eb('phone', 'like', `%${digits}%`)] : []),
      ]),
    );
  }
  const rows = await query
    .orderBy('id')
    .limit(q.limit + 1)
    .execute();
  const p = page(rows, q.limit);
  return { data: p.data.map(contactView), hasMore: p.hasMore, nextCursor: p.nextCursor };
}

/**
 * A contact changed by id (the console's contact page): name and attributes with the rules of
 * POST /contacts (attribute counts per contact and per account). Locks in upsertContact's order.
 */
export async function editContact(
  s: Services,
  accountId: string,
  id: string,
  input: { name?: string | undefined; attributes?: AttributePatch | undefined },
) {
  const now = s.clock.now();
  const row = await s.db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('contacts')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('erased_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!existing) throw new ApiError('contact_not_found');
    const patch = input.attributes ?? {};
    const contact = await updateContact(trx, existing, input, patch, now);
    await rememberFields(
      trx,
      accountId,
      Object.keys(patch).filter((k) => patch[k] !== null),
      now,
    );
    return contact;
  });
  return contactView(row);
}

/**
 * One attribute set on a contact (the automation `set_attribute` step), with the same counts as
 * the API (decisions.md "Attribute counts"). The contact is locked first (lock order 2).
 */
export async function setContactAttribute(
  trx: Trx,
  accountId: string,
  contactId: string,
  key: string,
  value: string,
  now: Date,
): Promise<ContactRow> {
  const existing = await trx.selectFrom('contacts').selectAll().where('id', '=', contactId).forNoKeyUpdate().executeTakeFirstOrThrow();
  const patch: AttributePatch = { [key]: value };
  assertAttributeRoom(existing.attributes, patch);
  const contact = await trx
    .updateTable('contacts')
    .set({ attributes: mergePatch(patch), updated_at: now })
    .where('id', '=', contactId)
    .returningAll()
    .executeTakeFirstOrThrow();
  await rememberFields(trx, accountId, [key], now);
  return contact;
}
