import { describe, expect, it } from 'vitest';
import { type Answerer, type HandledBy, nextHandledBy } from './handled-by.js';

// The design's table (docs: automations design "Who answered a case").
const TABLE: [HandledBy, Answerer, HandledBy][] = [
  ['none', 'automation', 'automation'],
  ['none', 'ai', 'ai'],
  ['none', 'human', 'human'],
  ['automation', 'automation', 'automation'],
  ['ai', 'ai', 'ai'],
  ['human', 'human', 'human'],
  ['automation', 'human', 'human'],
  ['automation', 'ai', 'ai'],
  ['human', 'automation', 'human'],
  ['ai', 'automation', 'ai'],
  ['ai', 'human', 'mixed'],
  ['human', 'ai', 'mixed'],
  ['mixed', 'automation', 'mixed'],
  ['mixed', 'ai', 'mixed'],
  ['mixed', 'human', 'mixed'],
];

describe('nextHandledBy (none→who; same→same; automation+human→human; automation+ai→ai; human+automation→human; ai+automation→ai; ai+human→mixed; human+ai→mixed; mixed+*→mixed)', () => {
  it.each(TABLE)('%s + %s → %s', (current, who, expected) => {
    expect(nextHandledBy(current, who)).toBe(expected);
  });
});
