// What a stretch said: the messages a turn shows the model (turns.ts) and a review grades
// (reviews.ts), read one way.
import type { Executor } from '../db/index.js';
import type { MessageRow, StretchRow } from '../db/types.js';

export type StretchMessage = Pick<MessageRow, 'id' | 'direction' | 'type' | 'text' | 'template_name' | 'created_at'>;

/**
 * A stretch's latest `limit` messages, oldest first (reactions are not messages): from the one
 * that started it (`since_id`; UUIDv7 ids grow with time) up to `untilId` when given (an ended
 * stretch's newest), and the customer's only up to `upTo` when given (a turn's newest inbound
 * message; later ones are the next turn's).
 */
export async function stretchMessages(
  db: Executor,
  st: Pick<StretchRow, 'conversation_id' | 'since_id'>,
  o: { limit: number; upTo?: string; untilId?: string | null },
): Promise<StretchMessage[]> {
  const { upTo, untilId } = o;
  const rows = await db
    .selectFrom('messages')
    .select(['id', 'direction', 'type', 'text', 'template_name', 'created_at'])
    .where('conversation_id', '=', st.conversation_id)
    .where('id', '>=', st.since_id)
    .where('type', '<>', 'reaction')
    .$if(untilId != null, (q) => q.where('id', '<=', untilId as string))
    .$if(upTo !== undefined, (q) => q.where((eb) => eb.or([eb('direction', '=', 'outbound'), eb('id', '<=', upTo as string)])))
    .orderBy('id', 'desc')
    .limit(o.limit)
    .execute();
  return rows.reverse();
}
