// A comment on one of our Instagram posts (docs/instagram.md "Comments"; spec social.md "Comment"):
// no message.received and no case (it is not a message of the conversation); it starts the oldest
// active `comment` automation of the account whose keywords it matches (all of them when it has
// none), with `variables.comentario` = the text, and that execution's first `send` answers the
// comment with a private reply (`recipient: {comment_id}`, messages/send.ts), after which the
// conversation is open. Meta re-sends: a comment id seen before changes nothing.
import { insertExecution } from '../../automations/executions.js';
import type { Trigger } from '../../automations/flow.js';
import { startAllowed } from '../../automations/loops.js';
import { keywordMatches } from '../../automations/text.js';
import { contactForInbound, contactView, fillProfileName, fillSocialUsername } from '../../contacts/service.js';
import { conversationFor } from '../../conversations/service.js';
import { transaction } from '../../db/retry.js';
import { newId } from '../../lib/ids.js';
import type { Services } from '../../services.js';
import { emitEvent } from '../../webhooks/outbox.js';

export interface CommentInput {
  accountId: string;
  socialAccountId: string;
  /** The commenter's Instagram-scoped id. */
  userId: string;
  username: string | null;
  commentId: string;
  mediaId: string | null;
  text: string | null;
}

export interface CommentResult {
  duplicate: boolean;
  contactId: string | null;
  conversationId: string | null;
  /** The execution the comment started, if any. */
  executionId: string | null;
}

export async function receiveComment(s: Services, c: CommentInput): Promise<CommentResult> {
  const known = await s.db
    .selectFrom('social_comments')
    .select(['contact_id', 'conversation_id', 'execution_id'])
    .where('comment_id', '=', c.commentId)
    .executeTakeFirst();
  if (known)
    return { duplicate: true, contactId: known.contact_id, conversationId: known.conversation_id, executionId: known.execution_id };
  const now = s.clock.now();
  const out = await transaction(s.db, async (trx): Promise<CommentResult & { contactCreated: boolean }> => {
    // The contact, then the conversation (docs/architecture.md "Lock order"), as a direct message.
    const found = await contactForInbound(trx, c.accountId, { socialchat: c.userId }, now);
    let contact = await fillProfileName(trx, found.contact, c.username ?? 'Instagram', now);
    contact = await fillSocialUsername(trx, contact, c.username ?? undefined, now);
    const conversation = await conversationFor(
      trx,
      { accountId: c.accountId, contactId: contact.id, phoneNumberId: null, channel: 'socialchat', socialAccountId: c.socialAccountId },
      now,
    );
    const stored = await trx
      .insertInto('social_comments')
      .values({
        id: newId(),
        account_id: c.accountId,
        social_account_id: c.socialAccountId,
        comment_id: c.commentId,
        contact_id: contact.id,
        conversation_id: conversation.id,
        media_id: c.mediaId,
        text: c.text,
        created_at: now,
      })
      .onConflict((oc) => oc.column('comment_id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!stored)
      return { duplicate: true, contactId: contact.id, conversationId: conversation.id, executionId: null, contactCreated: false };
    if (found.created) {
      const data = { source: 'socialchat', contact: contactView(contact) };
      await emitEvent(trx, { accountId: c.accountId, kind: 'contact.created', data }, now);
    }
    // Nobody else is answering this conversation: the team, an agent or a running execution go first.
    let executionId: string | null = null;
    if (conversation.handling_type === null) {
      const candidates = await trx
        .selectFrom('automations')
        .select(['id', 'name', 'account_id', 'trigger', 'steps', 'starts_per_minute'])
        .where('account_id', '=', c.accountId)
        .where('status', '=', 'active')
        .where('deleted_at', 'is', null)
        .where('phone_number_id', 'is', null)
        .where((eb) => eb(eb.ref('trigger', '->>').key('type'), '=', 'comment'))
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      const chosen = candidates.find((a) => {
        const t = a.trigger as Extract<Trigger, { type: 'comment' }>;
        return !t.keywords?.length || keywordMatches({ keywords: t.keywords, match: 'contains' }, c.text);
      });
      // Past the automation's start rate the comment starts nothing (automations/loops.ts).
      if (chosen && (await startAllowed(s, chosen))) {
        const steps = chosen.steps as { id: string }[];
        const row = await insertExecution(
          trx,
          {
            automation: chosen,
            firstStepId: steps[0]?.id ?? null,
            conversationId: conversation.id,
            contactId: contact.id,
            phoneNumberId: null,
            variables: { comentario: c.text ?? '' },
            trigger: 'comment',
            test: false,
            replyCommentId: c.commentId,
          },
          now,
        );
        executionId = row?.id ?? null;
        if (executionId) await trx.updateTable('social_comments').set({ execution_id: executionId }).where('id', '=', stored.id).execute();
      }
    }
    return { duplicate: false, contactId: contact.id, conversationId: conversation.id, executionId, contactCreated: found.created };
  });
  s.dispatcher.wake();
  if (out.executionId) s.automations.wake();
  if (out.contactCreated) s.accountViews.changed(c.accountId);
  return { duplicate: out.duplicate, contactId: out.contactId, conversationId: out.conversationId, executionId: out.executionId };
}
