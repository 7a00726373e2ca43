import { describe, expect, it } from 'vitest';
import { parseWebhook } from './webhook.js';

const now = new Date('2026-01-01T00:00:00Z');
const change = (value: unknown, field = 'messages') => ({
  object: 'whatsapp_business_account',
  entry: [{ id: 'WABA', changes: [{ field, value }] }],
});
const metadata = { phone_number_id: 'PN1' };

describe('parseWebhook: Meta adds fields; anything unknown or malformed is skipped, never a failure', () => {
  it('"unknown fields pass": a message with fields we do not know is still read', () => {
    const r = parseWebhook(
      change({
        metadata: { ...metadata, display_phone_number: '1' },
        contacts: [{ wa_id: '549111', profile: { name: 'Ana' }, extra: 1 }],
        messages: [{ id: 'wamid.1', from: '549111', type: 'text', timestamp: '1700000000', text: { body: 'hola' }, brand_new: { x: 1 } }],
      }),
      now,
    );
    expect(r.items).toEqual([
      expect.objectContaining({
        kind: 'message',
        wamid: 'wamid.1',
        from: '549111',
        name: 'Ana',
        text: 'hola',
        timestamp: new Date(1_700_000_000_000),
      }),
    ]);
  });

  it('"malformed parts are skipped": the rest of the batch is processed and the skip is reported', () => {
    const r = parseWebhook(
      change({
        metadata,
        messages: ['nope', { id: 'wamid.2' }, { id: 'wamid.3', from: 549111, type: 'image', image: { caption: 42 } }],
        statuses: [null, { id: 'wamid.9', status: 'weird' }, { id: 'wamid.8', status: 'failed', errors: [{ code: '131050' }] }],
      }),
      now,
    );
    expect(r.items).toEqual([
      expect.objectContaining({ kind: 'message', wamid: 'wamid.3', from: '549111', text: '42', timestamp: now }),
      expect.objectContaining({ kind: 'status', wamid: 'wamid.8', status: 'failed', code: 131050 }),
    ]);
    expect(r.skipped).toEqual(['malformed message', 'malformed message', 'status undefined', 'status weird']);
  });

  it('"every number from Meta is bounded before a typed column": a status whose error code the integer column cannot keep is skipped, the rest read', () => {
    const statuses = [
      { id: 'wamid.a', status: 'failed', errors: [{ code: 99_999_999_999 }] },
      { id: 'wamid.b', status: 'failed', errors: [{ code: '4294967296' }] },
      { id: 'wamid.c', status: 'failed', errors: [{ code: 2.5 }] },
      { id: 'wamid.d', status: 'failed', errors: [{ code: -1 }] },
      { id: 'wamid.e', status: 'failed', errors: [{ code: '1'.repeat(400) }] },
      { id: 'wamid.f', status: 'failed', errors: [{ code: 2_147_483_647 }] },
      { id: 'wamid.g', status: 'failed', errors: [{ title: 'no code' }] },
      { id: 'wamid.h', status: 'delivered' },
    ];
    const r = parseWebhook(change({ metadata, statuses }), now);
    expect(r.items).toEqual([
      expect.objectContaining({ wamid: 'wamid.f', status: 'failed', code: 2_147_483_647 }),
      expect.objectContaining({ wamid: 'wamid.g', status: 'failed', code: null }),
      expect.objectContaining({ wamid: 'wamid.h', status: 'delivered', code: null }),
    ]);
    expect(r.skipped).toEqual(Array(5).fill('status failed with a malformed error code'));
  });

  it('"strings bounded before an indexed column": a template id or name longer than any real one reads as absent', () => {
    const long = 'x'.repeat(5000);
    const r = parseWebhook(
      change(
        { event: 'APPROVED', message_template_id: long, message_template_name: long, message_template_language: 'es_AR' },
        'message_template_status_update',
      ),
      now,
    );
    expect(r.items).toEqual([expect.objectContaining({ kind: 'template', templateId: null, name: null, language: 'es_AR' })]);
  });

  it('"only a UUID counts": biz_opaque_callback_data is our message id, anything else reads as absent (operations.md "Reconciliation")', () => {
    const id = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const r = parseWebhook(
      change({
        metadata,
        statuses: [
          { id: 'wamid.1', status: 'delivered', biz_opaque_callback_data: id },
          { id: 'wamid.2', status: 'delivered', biz_opaque_callback_data: 'pedido-42' },
          { id: 'wamid.3', status: 'delivered', biz_opaque_callback_data: { id } },
          { id: 'wamid.4', status: 'delivered', biz_opaque_callback_data: `${id} ` },
          { id: 'wamid.5', status: 'delivered' },
        ],
      }),
      now,
    );
    expect(r.items.map((i) => (i.kind === 'status' ? i.messageId : 'x'))).toEqual([id, null, null, null, null]);
  });

  it('"never a 500": payloads of the wrong shape give no items', () => {
    for (const p of [null, [], 'x', 42, { entry: 'x' }, { entry: [{ changes: [{ value: [] }] }] }, change({ messages: [] })]) {
      expect(parseWebhook(p, now).items).toEqual([]);
    }
    expect(parseWebhook(change({ messages: [] }), now).skipped).toEqual(['messages change without metadata.phone_number_id']);
  });

  it('template updates: status event and category, by Meta id', () => {
    const r = parseWebhook(
      change(
        { event: 'APPROVED', message_template_id: 123, message_template_name: 'promo', message_template_language: 'es_AR' },
        'message_template_status_update',
      ),
      now,
    );
    expect(r.items).toEqual([
      { kind: 'template', wabaId: 'WABA', templateId: '123', name: 'promo', language: 'es_AR', status: 'APPROVED', category: null },
    ]);
  });
});
