// The inbox's live kinds: the list and the open conversation are read again on each.
import { subscribe } from '../../api/live';

const LIVE_KINDS = ['message.received', 'message.sent', 'message.status', 'conversation.updated'];

/** Calls fn on each live event of the inbox's kinds; returns the unsubscribe. */
export function onInboxEvent(fn: () => void): () => void {
  const offs = LIVE_KINDS.map((k) => subscribe(k, fn));
  return () => {
    for (const off of offs) off();
  };
}
