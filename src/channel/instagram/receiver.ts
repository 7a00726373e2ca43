// The Instagram webhook, once parsed: find the social accounts it names, check the signature with
// their app secrets, and run the direct messages through the one inbound path together (one
// batch: conversations/inbound.ts, set-wise), then every comment and read in order through their
// own paths (a read of a message of the same body finds it stored). Idempotent (Meta re-sends):
// messages dedupe on the mid, statuses only move forward. Mirrors ../cloud/receiver.ts.
import {
  type InboundInput,
  type InboundRefusal,
  type InboundResult,
  receiveInbound,
  receiveInboundBatch,
} from '../../conversations/inbound.js';
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

  const messages: InboundInput[] = [];
  const others: [ParsedComment | ParsedRead, SocialAccountRow][] = [];
  for (const item of items) {
    const account = accounts.get(item.igUserId);
    if (!account) {
      s.log.warn({ igUserId: item.igUserId }, 'instagram webhook for an account that is not ours or not verified');
      outcome.skipped += 1;
    } else if (item.kind === 'message') messages.push(inboundOf(item, account));
    else others.push([item, account]);
  }
  await processMessages(s, messages, outcome);
  for (const [item, account] of others) {
    if (item.kind === 'comment') await guarded(s, outcome, () => processComment(s, item, account, outcome));
    else await guarded(s, outcome, () => processRead(s, item, account, outcome));
  }
  return outcome;
}

const inboundOf = (item: ParsedDirectMessage, account: SocialAccountRow): InboundInput => ({
  accountId: account.account_id,
  phoneNumberId: null,
  socialchat: item.userId,
  socialAccountId: account.id,
  providerMessageId: item.mid,
  type: item.type,
  text: item.text,
  timestamp: item.timestamp,
});

/**
 * The body's direct messages as one batch, in their order. A batch whose transaction fails (not a
 * refusal of one message: those come back one by one) runs again a message at a time, so one
 * message that cannot be stored does not hold back the others.
 */
async function processMessages(s: Services, inputs: InboundInput[], outcome: InstagramOutcome): Promise<void> {
  if (inputs.length === 0) return;
  let results: (InboundResult | InboundRefusal)[];
  try {
    results = await receiveInboundBatch(s, inputs);
  } catch (err) {
    if (inputs.length === 1) return tally(s, outcome, err);
    for (const input of inputs) await guarded(s, outcome, () => processMessage(s, input, outcome));
    return;
  }
  for (const r of results) {
    if (r instanceof Error) tally(s, outcome, r);
    else if (r.duplicate) outcome.duplicates += 1;
    else outcome.messages += 1;
  }
}

/** Runs one item; our own refusals (ApiError) are logged and skipped, other failures counted. */
async function guarded(s: Services, outcome: InstagramOutcome, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    tally(s, outcome, err);
  }
}

/** An item that did not go through: our own refusal (ApiError) is skipped, anything else failed. */
function tally(s: Services, outcome: InstagramOutcome, err: unknown): void {
  if (err instanceof ApiError) {
    s.log.warn({ code: err.code }, 'instagram webhook item refused');
    outcome.skipped += 1;
  } else {
    s.log.error({ err }, 'instagram webhook item failed');
    outcome.failed += 1;
  }
}

async function processMessage(s: Services, input: InboundInput, outcome: InstagramOutcome): Promise<void> {
  const r = await receiveInbound(s, input);
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
