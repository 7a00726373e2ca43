// Erasure of one person on request (docs/privacy.md "Erasure and export of one person"): in one
// transaction, what runs for them stops, every row that carries their data is scrubbed, and the
// contact becomes a tombstone. Messages, cases, campaign recipients, executions, stretches and
// reviews keep their ids, times and statuses (the counts of GET /me, the boards and the campaigns
// still add up); their text, variables, transcripts, notes and copies are gone. Each statement is
// set-based (one per table), so a long history is still a handful of statements.
import { sql } from 'kysely';
import { endRunningStretch } from '../agents/stretches.js';
import { type AuditWho, audit } from '../audit/trail.js';
import { cancelRunning } from '../automations/cancel.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import { ApiError } from '../http/errors.js';
import type { Services } from '../services.js';
import { scrubCopies } from './erasure-copies.js';

/** What the erasure touched, as counts (the audit line's `changes`: never the person's data). */
export interface Erased {
  conversations: number;
  messages: number;
  cases: number;
}

/** DELETE …/contacts/{contactId}: 404 for an unknown, another account's or an already erased contact. */
export async function eraseContact(s: Services, accountId: string, contactId: string, who: AuditWho): Promise<Erased> {
  const now = s.clock.now();
  // A deadlock with a concurrent writer (PostgreSQL rolls one back) runs it again whole.
  const erased = await transaction(s.db, async (trx) => {
    // The contact first (lock order 2, as the inbound path): a message of theirs waits for the commit.
    const contact = await trx
      .selectFrom('contacts')
      .select(['id', 'phone', 'socialchat_id', 'opted_out', 'marketing_opt_out', 'created_at'])
      .where('account_id', '=', accountId)
      .where('id', '=', contactId)
      .where('erased_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
    if (!contact) throw new ApiError('contact_not_found');
    const conversationIds = (
      await trx.selectFrom('conversations').select('id').where('contact_id', '=', contactId).orderBy('id').execute()
    ).map((c) => c.id);

    await stopWhatRuns(trx, conversationIds, now);
    const { messageIds, cases } = await scrubRows(trx, contactId, conversationIds, now);
    await scrubCopies(trx, {
      accountId,
      contactId,
      conversationIds,
      messageIds,
      phone: contact.phone,
      socialchatId: contact.socialchat_id,
      since: contact.created_at,
    });
    if (contact.phone && (contact.opted_out || contact.marketing_opt_out)) await keepOptOut(trx, accountId, contact.phone, contact, now);
    await trx
      .updateTable('contacts')
      .set({
        phone: null,
        socialchat_id: null,
        socialchat_username: null,
        name: '',
        attributes: '{}',
        opted_out: false,
        marketing_opt_out: false,
        erased_at: now,
        updated_at: now,
      })
      .where('id', '=', contactId)
      .execute();
    const result = { conversations: conversationIds.length, messages: messageIds.length, cases };
    await audit(trx, now, who, { accountId, action: 'contact.erased', target: { type: 'contact', id: contactId }, changes: result });
    return result;
  });
  // GET /me counts the account's contacts.
  s.accountViews.changed(accountId);
  return erased;
}

/**
 * Their opt-out stays in force for a contact later made with the same phone (migrations/0036's
 * trigger applies it): kept as a hash of account and phone, with the flags and nothing else.
 */
async function keepOptOut(
  trx: Trx,
  accountId: string,
  phone: string,
  flags: { opted_out: boolean; marketing_opt_out: boolean },
  now: Date,
): Promise<void> {
  await sql`
    INSERT INTO contact_suppressions (account_id, phone_hash, opted_out, marketing_opt_out, created_at)
    VALUES (${accountId}, contact_phone_hash(${accountId}::uuid, ${phone}), ${flags.opted_out}, ${flags.marketing_opt_out}, ${now})
    ON CONFLICT (account_id, phone_hash) DO UPDATE SET
      opted_out = contact_suppressions.opted_out OR EXCLUDED.opted_out,
      marketing_opt_out = contact_suppressions.marketing_opt_out OR EXCLUDED.marketing_opt_out`.execute(trx);
}

/**
 * Their conversations' running executions are cancelled and agent stretches ended (as idle: no
 * event, no note, the conversation no longer handled); a runner in the middle of a step or a model
 * call finds its claim gone and stops there.
 */
async function stopWhatRuns(trx: Trx, conversationIds: string[], now: Date): Promise<void> {
  if (conversationIds.length === 0) return;
  for (const conversationId of conversationIds) {
    await cancelRunning(trx, { conversationId }, now);
    await endRunningStretch(trx, conversationId, { by: 'idle' }, now);
  }
}

/** The rows that are theirs: personal fields nulled, ids, times and statuses kept. */
async function scrubRows(
  trx: Trx,
  contactId: string,
  conversationIds: string[],
  now: Date,
): Promise<{ messageIds: string[]; cases: number }> {
  if (conversationIds.length === 0) return { messageIds: [], cases: 0 };
  await sql`
    DELETE FROM early_statuses WHERE wamid IN (
      SELECT wamid FROM messages WHERE conversation_id = ANY(${conversationIds}::uuid[]) AND wamid IS NOT NULL)`.execute(trx);
  const messages = await trx
    .updateTable('messages')
    // wamid too: Meta's message ids encode the customer's number. A late status finds no message.
    .set({ text: null, template_variables: null, to_phone: null, error: null, wamid: null })
    .where('conversation_id', 'in', conversationIds)
    .returning(['id'])
    .execute();
  const messageIds = messages.map((m) => m.id);
  if (messageIds.length > 0) await trx.deleteFrom('sandbox_reports').where('message_id', 'in', messageIds).execute();

  const cases = await trx
    .updateTable('cases')
    .set({ stage_fields: '{}', outcome_note: null, outcome_external_id: null })
    .where('conversation_id', 'in', conversationIds)
    .returning(['id'])
    .execute();
  if (cases.length > 0) {
    // Their classification queue items would send no text to the model now: gone.
    await trx
      .deleteFrom('case_classifications')
      .where(
        'case_id',
        'in',
        cases.map((c) => c.id),
      )
      .execute();
  }
  await trx.deleteFrom('conversation_notes').where('conversation_id', 'in', conversationIds).execute();

  // Flows: saved answers (variables), step logs (what was sent or asked), unread inputs.
  const executions = trx.selectFrom('automation_executions').select('id').where('conversation_id', 'in', conversationIds);
  await trx
    .updateTable('automation_executions')
    .set({ variables: '{}', error: null, last_error: null })
    .where('conversation_id', 'in', conversationIds)
    .execute();
  await trx.updateTable('automation_steps').set({ detail: null }).where('execution_id', 'in', executions).execute();
  await trx.deleteFrom('automation_inputs').where('execution_id', 'in', executions).execute();

  // Agents: summaries, goal data, model transcripts (tool calls and decisions), reviews.
  const stretches = trx.selectFrom('agent_stretches').select('id').where('conversation_id', 'in', conversationIds);
  await trx
    .updateTable('agent_stretches')
    .set({ summary: null, goal_data: null, last_error: null })
    .where('conversation_id', 'in', conversationIds)
    .execute();
  await trx.updateTable('agent_turns').set({ tool_calls: null, outcome: null, error: null }).where('stretch_id', 'in', stretches).execute();
  // A review not yet made would read nothing now: it is dropped; a made one keeps its results.
  await trx.deleteFrom('agent_reviews').where('conversation_id', 'in', conversationIds).where('status', '<>', 'done').execute();
  await trx
    .updateTable('agent_reviews')
    .set({ summary: null, extracted: null, error: null })
    .where('conversation_id', 'in', conversationIds)
    .execute();

  await trx.updateTable('social_comments').set({ text: null }).where('contact_id', '=', contactId).execute();
  // Campaign recipients: no phone; a recipient still waiting is never sent (skipped, like a deleted contact).
  await trx
    .updateTable('campaign_recipients')
    .set({ status: 'skipped', error: 'contact_erased', retry_at: null, updated_at: now })
    .where('contact_id', '=', contactId)
    .where('status', '=', 'pending')
    .execute();
  await trx.updateTable('campaign_recipients').set({ phone: '' }).where('contact_id', '=', contactId).execute();
  // Parked queue items of theirs keep no error text that might quote them.
  await sql`
    UPDATE dead_letters SET last_error = ''
    WHERE item_id IN (
      SELECT id::text FROM automation_executions WHERE conversation_id = ANY(${conversationIds}::uuid[])
      UNION ALL SELECT id::text FROM agent_stretches WHERE conversation_id = ANY(${conversationIds}::uuid[])
      UNION ALL SELECT id::text FROM agent_reviews WHERE conversation_id = ANY(${conversationIds}::uuid[]))`.execute(trx);
  return { messageIds, cases: cases.length };
}
