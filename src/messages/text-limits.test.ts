import { describe, expect, it } from 'vitest';
import { boundReplies, MAX_REPLIES_PER_TURN, splitText, TEXT_BOUNDS, type TextBound } from './text-limits.js';

/** A bound of `max` characters (UTF-16 code units), as WhatsApp's. */
const chars = (max: number): TextBound => ({ ...TEXT_BOUNDS.whatsapp, max });

describe('"Bound every outbound text to the channel\'s limit (WhatsApp 4,096, Instagram 1,000)"', () => {
  it('the limits and the replies per turn', () => {
    expect(TEXT_BOUNDS.whatsapp.max).toBe(4096);
    expect(TEXT_BOUNDS.instagram.max).toBe(1000);
    // Instagram counts UTF-8 bytes: ñ is 2, an emoji 4.
    expect(TEXT_BOUNDS.instagram.measure('ñandú😀')).toBe(11);
    expect(MAX_REPLIES_PER_TURN).toBe(3);
  });

  it('a text within the limit is one piece, trimmed', () => {
    expect(splitText('  Hola  ', chars(10), 3)).toEqual({ parts: ['Hola'], cut: false });
    expect(splitText('x'.repeat(4096), chars(4096), 3)).toEqual({ parts: ['x'.repeat(4096)], cut: false });
    expect(splitText('', chars(10), 3)).toEqual({ parts: [], cut: false });
  });

  it('"split at sentence/line boundaries": a paragraph break first, then a line break', () => {
    const a = 'Primer párrafo. Sigue acá.';
    const b = 'Segundo párrafo.\nCon otra línea.';
    expect(splitText(`${a}\n\n${b}`, chars(40), 3)).toEqual({ parts: [a, 'Segundo párrafo.\nCon otra línea.'], cut: false });
    expect(splitText('Una línea bastante larga\nOtra línea', chars(30), 3)).toEqual({
      parts: ['Una línea bastante larga', 'Otra línea'],
      cut: false,
    });
  });

  it('then a sentence end, then a space, then a hard cut', () => {
    expect(splitText('Hola, ¿cómo va? Tenemos yerba Amanda y Playadito hoy.', chars(30), 3).parts[0]).toBe('Hola, ¿cómo va?');
    expect(splitText('palabra otra palabra más larga todavía', chars(20), 3).parts).toEqual(['palabra otra palabra', 'más larga todavía']);
    expect(splitText('x'.repeat(25), chars(10), 3)).toEqual({ parts: ['x'.repeat(10), 'x'.repeat(10), 'xxxxx'], cut: false });
  });

  it('a hard cut never splits a surrogate pair', () => {
    const parts = splitText(`${'x'.repeat(9)}😀${'y'.repeat(5)}`, chars(10), 3).parts;
    expect(parts).toEqual(['x'.repeat(9), '😀yyyyy']);
  });

  it('"into at most 3 messages": what does not fit is cut and the last ends in "…", within the limit', () => {
    const { parts, cut } = splitText('Una oración. '.repeat(10_000), chars(4096), 3);
    expect(cut).toBe(true);
    expect(parts).toHaveLength(3);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(4096);
    expect(parts[2]?.endsWith('…')).toBe(true);
    expect(parts[0]?.endsWith('Una oración.')).toBe(true);
    const hard = splitText('x'.repeat(100_000), chars(1000), 3);
    expect(hard.parts.map((p) => p.length)).toEqual([1000, 1000, 1000]);
    expect(hard.parts[2]).toBe(`${'x'.repeat(999)}…`);
  });

  it('"cap replies per agent turn (default 3)": 300 replies → 3 messages, 297 dropped', () => {
    const replies = Array.from({ length: 300 }, (_, i) => `Respuesta ${i + 1}`);
    expect(boundReplies(replies, chars(4096))).toEqual({
      messages: ['Respuesta 1', 'Respuesta 2', 'Respuesta 3'],
      dropped: 297,
      cut: false,
    });
  });

  it("Instagram's bound counts bytes: 600 ñ (1,200 bytes) go in two messages of at most 1,000 bytes", () => {
    const r = splitText('ñ'.repeat(600), TEXT_BOUNDS.instagram, 3);
    expect(r.parts.map((p) => Buffer.byteLength(p))).toEqual([1000, 200]);
    const cut = splitText('😀'.repeat(1000), TEXT_BOUNDS.instagram, 1);
    expect(Buffer.byteLength(cut.parts[0]!)).toBeLessThanOrEqual(1000);
    expect(cut.parts[0]).toBe(`${'😀'.repeat(249)}…`);
  });

  it('a long reply takes the room of the replies after it', () => {
    const long = `${'a'.repeat(900)}\n${'b'.repeat(900)}`;
    const r = boundReplies(['Hola', long, 'Chau'], chars(1000));
    expect(r).toEqual({ messages: ['Hola', 'a'.repeat(900), 'b'.repeat(900)], dropped: 1, cut: false });
    expect(boundReplies([long], chars(1000), 1)).toEqual({ messages: [`${'a'.repeat(900)}…`], dropped: 0, cut: true });
  });
});
