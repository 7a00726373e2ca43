// Cancelling running executions (docs/automations.md "Executions"): a team member sends in the
// conversation, the operator stops it, or its automation is paused or deleted. No event.
// A runner that is in the middle of one of its steps finds its claim gone when it writes the
// step's end (every write checks `status = 'running'` and the claim) and stops there.
import { clearHandling, lockConversations } from '../conversations/service.js';
import type { Executor } from '../db/index.js';

export type CancelTarget = { conversationId: string } | { automationId: string } | { executionId: string };

/**
 * Cancels the running executions of a conversation, an automation or one execution; returns the
 * ids cancelled. The conversations they handled stop showing the automation as `handling`
 * (a team reply sets `team` after this). Lock order: the execution rows come after the
 * conversation, case and message locks of the caller's transaction (docs/architecture.md).
 */
export async function cancelRunning(trx: Executor, target: CancelTarget, now: Date): Promise<string[]> {
  let find = trx.selectFrom('automation_executions').select(['id', 'conversation_id']).where('status', '=', 'running');
  if ('conversationId' in target) find = find.where('conversation_id', '=', target.conversationId);
  else if ('automationId' in target) find = find.where('automation_id', '=', target.automationId);
  else find = find.where('id', '=', target.executionId);
  const running = await find.execute();
  if (running.length === 0) return [];
  // The conversations first (lock 3), then their executions: the inbound path's order.
  await lockConversations(trx, [...new Set(running.map((r) => r.conversation_id))]);
  const rows = await trx
    .updateTable('automation_executions')
    .set({ status: 'cancelled', ended_at: now, run_at: null, claim: null, updated_at: now })
    .where('status', '=', 'running')
    .where(
      'id',
      'in',
      running.map((r) => r.id),
    )
    .returning(['id', 'conversation_id'])
    .execute();
  if (rows.length === 0) return [];
  await clearHandling(
    trx,
    rows.map((r) => r.conversation_id),
    'automation',
  );
  // Their unread input is dropped with them.
  await trx
    .deleteFrom('automation_inputs')
    .where(
      'execution_id',
      'in',
      rows.map((r) => r.id),
    )
    .execute();
  return rows.map((r) => r.id);
}
