// The Instagram webhook, once parsed: find the social accounts it names, check the signature with
// their app secrets, and run every direct message through the one inbound path and every read
// through the status machine. Idempotent (Meta re-sends): messages dedupe on the mid, statuses
// only move forward. Mirrors ../cloud/receiver.ts.
import { receiveInbound } from '../../conversations/inbound.js';
import type { SocialAccountRow } from '../../db/types.js';
import { ApiError } from '../../http/errors.js';
import { reportStatus } from '../../messages/status.js';
import type { Services } from '../../services.js';
import { verifySignature } from '../cloud/signature.js';
import { instagramAccountsByIgId, instagramAppSecret, instagramAppSecrets } from '../social-accounts.js';
import { receiveComment } from './comments.js';
import { namedIgUserIds, type ParsedComment, type ParsedDirectMessage, type ParsedRead, parseInstagramWebhook } from './webhook.js';

export interface InstagramOutcome {
  /** The signature matches no app secret of the social accounts the payload names: answer 401, nothing done. */
  unauthorized: boolean;
  messages: number;
  duplicates: number;
  reads: number;
  comments: number;
  skipped: number;
  /** Items that failed for a reason other than our own rules: answer 500 so Meta sends the batch again. */
  failed: number;
}

/** Does the signature match the app secret of any Instagram social account? (Payloads that name none of ours.) */
export async function signedByAnySocialAccount(s: Services, raw: Buffer, signature: string | undefined): Promise<boolean> {
  if (!signature) return false;
  return (await instagramAppSecrets(s)).some((secret) => verifySignature(raw, signature, secret));
}

export async function handleInstagramWebhook(
  s: Services,
  raw: Buffer,
  payload: unknown,
  signature: string | undefined,
): Promise<InstagramOutcome> {
  const { items, skipped } = parseInstagramWebhook(payload, s.clock.now());
  const outcome: InstagramOutcome = {
    unauthorized: false,
    messages: 0,
    duplicates: 0,
    reads: 0,
    comments: 0,
    skipped: skipped.length,
    failed: 0,
  };
  if (skipped.length > 0) s.log.debug({ skipped }, 'instagram webhook: parts skipped');

  // Each account's data is authenticated by its own app secret (one Meta app signs one POST).
  const named = await instagramAccountsByIgId(s.db, namedIgUserIds(items));
  const verified = new Map<string, boolean>();
  const ok = (a: SocialAccountRow): boolean => {
    const secret = instagramAppSecret(s.secrets, a) ?? '';
    let v = verified.get(secret);
    if (v === undefined) {
      v = verifySignature(raw, signature, secret);
      verified.set(secret, v);
    }
    return v;
  };
  const accounts = new Map(named.filter(ok).map((a) => [a.ig_user_id!, a]));
  if (accounts.size === 0) {
    // Nothing of ours verified. A body signed by one of our apps that names no account of ours
    // (only echoes, Meta's test ping, an account removed here) is acknowledged and ignored.
    outcome.unauthorized = !(await signedByAnySocialAccount(s, raw, signature));
    if (!outcome.unauthorized) outcome.skipped += items.length;
    return outcome;
  }

  for (const item of items) {
    const account = accounts.get(item.igUserId);
    if (!account) {
      s.log.warn({ igUserId: item.igUserId }, 'instagram webhook for an account that is not ours or not verified');
      outcome.skipped += 1;
    } else if (item.kind === 'message') await guarded(s, outcome, () => processMessage(s, item, account, outcome));
    else if (item.kind === 'comment') await guarded(s, outcome, () => processComment(s, item, account, outcome));
    else await guarded(s, outcome, () => processRead(s, item, account, outcome));
  }
  return outcome;
}

/** Runs one item; our own refusals (ApiError) are logged and skipped, other failures counted. */
async function guarded(s: Services, outcome: InstagramOutcome, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ApiError) {
      s.log.warn({ code: err.code }, 'instagram webhook item refused');
      outcome.skipped += 1;
    } else {
      s.log.error({ err }, 'instagram webhook item failed');
      outcome.failed += 1;
    }
  }
}

async function processMessage(s: Services, item: ParsedDirectMessage, account: SocialAccountRow, outcome: InstagramOutcome): Promise<void> {
  const r = await receiveInbound(s, {
    accountId: account.account_id,
    phoneNumberId: null,
    socialchat: item.userId,
    socialAccountId: account.id,
    providerMessageId: item.mid,
    type: item.type,
    text: item.text,
    timestamp: item.timestamp,
  });
  if (r.duplicate) outcome.duplicates += 1;
  else outcome.messages += 1;
}

/** A comment starts the matching comment automation (comments.ts); a re-sent one changes nothing. */
async function processComment(s: Services, item: ParsedComment, account: SocialAccountRow, outcome: InstagramOutcome): Promise<void> {
  const r = await receiveComment(s, {
    accountId: account.account_id,
    socialAccountId: account.id,
    userId: item.userId,
    username: item.username,
    commentId: item.commentId,
    mediaId: item.mediaId,
    text: item.text,
  });
  if (r.duplicate) outcome.duplicates += 1;
  else outcome.comments += 1;
}

async function processRead(s: Services, item: ParsedRead, account: SocialAccountRow, outcome: InstagramOutcome): Promise<void> {
  // A read names a mid: it must be a message of this social account (or not stored yet: an early report).
  const msg = await s.db
    .selectFrom('messages as m')
    .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
    .select(['m.id', 'c.social_account_id'])
    .where('m.wamid', '=', item.mid)
    .executeTakeFirst();
  if (msg && msg.social_account_id !== account.id) {
    s.log.warn({ socialAccountId: account.id }, 'instagram read for a message of another account: ignored');
    outcome.skipped += 1;
    return;
  }
  await reportStatus(s, { wamid: item.mid, status: 'read', code: null, at: item.timestamp });
  outcome.reads += 1;
}
