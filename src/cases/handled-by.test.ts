import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import { type OpenDb, openDatabase } from '../db/index.js';
import { newId } from '../lib/ids.js';
import { type Answerer, type HandledBy, nextHandledBy, recordAnswer } from './handled-by.js';

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

// recordAnswer's one statement against a real database (PGlite, or PostgreSQL with DATABASE_URL):
// the same table, the row written only when it changes, the agent named, no open case → null.
describe('recordAnswer (one statement: the open case locked, handledBy moved by nextHandledBy)', () => {
  let open: OpenDb;
  let pgUrl: string | null = null;
  const at = new Date('2026-11-27T12:00:00Z');
  const later = new Date('2026-11-27T13:00:00Z');
  beforeAll(async () => {
    const base = process.env.DATABASE_URL;
    pgUrl = base?.startsWith('postgres') ? await freshPostgresDatabase(base) : null;
    open = await openDatabase(pgUrl ? { kind: 'postgres', url: pgUrl } : { kind: 'memory' });
    await sql`CREATE TABLE cases (id uuid PRIMARY KEY, conversation_id uuid NOT NULL, status text NOT NULL,
      handled_by text NOT NULL, agent_id uuid, agent_name text, updated_at timestamptz NOT NULL)`.execute(open.db);
  });
  afterAll(async () => {
    await open.close();
    if (pgUrl) await dropPostgresDatabase(pgUrl);
  });

  const openCase = async (handledBy: HandledBy, status = 'open') => {
    const c = { id: newId(), conversation_id: newId() };
    await sql`INSERT INTO cases VALUES (${c.id}, ${c.conversation_id}, ${status}, ${handledBy}, NULL, NULL, ${at})`.execute(open.db);
    return c;
  };
  const read = async (id: string) =>
    (
      await sql<{ handled_by: string; agent_id: string | null; agent_name: string | null; updated_at: Date }>`
      SELECT handled_by, agent_id, agent_name, updated_at FROM cases WHERE id = ${id}`.execute(open.db)
    ).rows[0]!;

  it.each(TABLE)('%s + %s → %s, written only when it changes', async (current, who, expected) => {
    const c = await openCase(current);
    expect(await recordAnswer(open.db, c.conversation_id, who, later)).toBe(c.id);
    const row = await read(c.id);
    expect(row.handled_by).toBe(expected);
    expect(row.updated_at.getTime()).toBe((expected === current ? at : later).getTime());
  });

  it("an AI agent's answer names it on the case, also when handledBy stays; no open case → null, a closed one untouched", async () => {
    const c = await openCase('ai');
    const agent = { id: newId(), name: 'Sofía' };
    await recordAnswer(open.db, c.conversation_id, 'ai', later, agent);
    expect(await read(c.id)).toMatchObject({ handled_by: 'ai', agent_id: agent.id, agent_name: 'Sofía' });
    const closed = await openCase('none', 'closed');
    expect(await recordAnswer(open.db, closed.conversation_id, 'human', later)).toBeNull();
    expect(await read(closed.id)).toMatchObject({ handled_by: 'none' });
  });
});
