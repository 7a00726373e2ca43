// Meta's Instagram webhook JSON as the receiver reads it (docs/instagram.md): what the fuzzing of
// `npm run faults` (instagram-fuzz) found answering 500 is malformed input, skipped or defaulted.
import { describe, expect, it } from 'vitest';
import { parseWebhook } from '../cloud/webhook.js';
import { parseInstagramWebhook } from './webhook.js';

const NOW = new Date('2026-11-26T12:00:00.000Z');
const IG = '17841400000000001';
const dm = (over: Record<string, unknown> = {}, message: Record<string, unknown> = { mid: 'm1', text: 'Hola' }) => ({
  object: 'instagram',
  entry: [{ id: IG, messaging: [{ sender: { id: '42' }, recipient: { id: IG }, timestamp: 1_764_158_400_000, message, ...over }] }],
});

describe('malformed but signed payloads never reach the database as they are', () => {
  it("a timestamp past the dates the database keeps (or past JavaScript's) reads as now", () => {
    for (const t of [8_640_000_000_000_001, 1e16, '9223372036854775808', '99999999999999999999999', 2.07e93]) {
      const { items } = parseInstagramWebhook(dm({ timestamp: t }), NOW);
      expect(items).toHaveLength(1);
      expect(items[0]?.timestamp).toEqual(NOW);
    }
  });

  it('an id longer than any real one (mid, sender, read) reads as absent: the part is skipped', () => {
    const long = 'ñ'.repeat(2_700);
    expect(parseInstagramWebhook(dm({}, { mid: long, text: 'Hola' }), NOW).items).toEqual([]);
    expect(parseInstagramWebhook(dm({ sender: { id: long } }), NOW).items).toEqual([]);
    const read = {
      object: 'instagram',
      entry: [{ id: IG, messaging: [{ sender: { id: '42' }, recipient: { id: IG }, read: { mid: long } }] }],
    };
    expect(parseInstagramWebhook(read, NOW).items).toEqual([]);
  });

  it('an `object` nested 10,000 arrays deep is described by its type, not serialised (no stack overflow)', () => {
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(parseInstagramWebhook({ object: deep, entry: [] }, NOW).skipped).toEqual(['object an array']);
    expect(parseWebhook({ object: deep, entry: [] }, NOW).skipped).toContain('object an array');
  });
});
