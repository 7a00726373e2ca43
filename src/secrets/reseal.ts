// Every sealed place in the database, and the one pass over them: on start it seals the values a
// version before sealing wrote in plain text; `POST /admin/v1/secrets/rotate` re-seals with the
// first key every value another key sealed. In batches by id, each row updated only if it still
// holds what was read (a concurrent write wins); a value sealed by a key the ring lacks is logged
// and left as it is, never a crash loop.
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import { announceChange, EVERY_ACCOUNT } from '../channel/hot-reads.js';
import type { Db } from '../db/index.js';
import { type Keyring, type Place, SecretKeyMissing, sealedBy } from './keyring.js';
import { mapHeaderValues } from './steps.js';

const BATCH = 200;

/** Text columns holding one credential each, by table (the id column is `id`). */
const COLUMNS: { table: string; columns: string[] }[] = [
  { table: 'phone_numbers', columns: ['cloud_access_token', 'cloud_app_secret', 'cloud_verify_token'] },
  { table: 'social_accounts', columns: ['access_token', 'app_secret', 'verify_token'] },
  { table: 'webhooks', columns: ['secret', 'previous_secret'] },
  { table: 'automations', columns: ['webhook_token'] },
];

export interface ResealResult {
  resealed: number;
  /** Key ids of values that could not be opened (not in SECRETS_KEYS), left as they are. */
  missingKeyIds: string[];
}

type Mode = 'plaintext' | 'rotate';

class Pass {
  resealed = 0;
  readonly missing = new Set<string>();
  constructor(
    readonly db: Db,
    readonly ring: Keyring,
    readonly mode: Mode,
    readonly log: FastifyBaseLogger,
  ) {}

  /** Does this value need a new seal in this pass? */
  due(value: string | null | undefined): value is string {
    if (value == null) return false;
    const by = sealedBy(value);
    return this.mode === 'plaintext' ? by === null : by !== this.ring.sealingKeyId;
  }

  /** The value sealed by the first key, or null when it cannot be opened (logged, left as it is). */
  redo(value: string, place: Place, where: string): string | null {
    try {
      return this.ring.seal(this.ring.open(value, place), place);
    } catch (err) {
      if (err instanceof SecretKeyMissing) {
        if (!this.missing.has(err.keyId))
          this.log.warn({ keyId: err.keyId, where }, 'secrets: a value sealed by a key not in SECRETS_KEYS');
        this.missing.add(err.keyId);
      } else {
        // Altered, or copied from another place (the place is bound in): it never opened anywhere.
        this.log.warn({ where, keyId: sealedBy(value) }, 'secrets: a sealed value does not open');
      }
      return null;
    }
  }

  /** What a sealed value not due in this pass starts with. */
  get prefix(): string {
    return this.mode === 'plaintext' ? 'sealed:v1:' : `sealed:v1:${this.ring.sealingKeyId}:`;
  }

  async columns(table: string, columns: string[]): Promise<void> {
    const prefix = this.prefix;
    const due = sql.join(
      columns.map((c) => sql`(${sql.ref(c)} IS NOT NULL AND left(${sql.ref(c)}, ${prefix.length}) <> ${prefix})`),
      sql` OR `,
    );
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const { rows } = await sql<Record<string, string | null>>`
        SELECT id::text AS id, ${sql.join(columns.map((c) => sql.ref(c)))} FROM ${sql.table(table)}
        WHERE id > ${after}::uuid AND (${due}) ORDER BY id LIMIT ${BATCH}`.execute(this.db);
      for (const row of rows) {
        for (const c of columns) {
          const old = row[c];
          if (!this.due(old)) continue;
          const next = this.redo(old, `${table}.${c}` as Place, table);
          if (next === null) continue;
          const r = await sql`UPDATE ${sql.table(table)} SET ${sql.ref(c)} = ${next}
            WHERE id = ${row.id}::uuid AND ${sql.ref(c)} = ${old}`.execute(this.db);
          this.resealed += Number(r.numAffectedRows ?? 0);
        }
      }
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1]!.id!;
    }
  }

  /** The header values of the http steps of automations (automations.steps, jsonb). */
  async stepHeaders(): Promise<void> {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = await this.db
        .selectFrom('automations')
        .select(['id', 'steps'])
        .where('id', '>', after)
        // Only flows with a header value not sealed as this pass wants (key ids are [A-Za-z0-9_-]).
        .where(
          sql<boolean>`jsonb_path_exists(steps, ${`$[*] ? (@.type == "http").headers.* ? (!(@ starts with "${this.prefix}"))`}::jsonpath)`,
        )
        .orderBy('id')
        .limit(BATCH)
        .execute();
      for (const row of rows) {
        let changed = 0;
        const steps = mapHeaderValues(row.steps, (v) => {
          if (!this.due(v)) return v;
          const next = this.redo(v, 'automations.steps.headers', 'automations.steps');
          if (next === null) return v;
          changed += 1;
          return next;
        });
        if (changed === 0) continue;
        const r = await sql`UPDATE automations SET steps = ${JSON.stringify(steps)}::jsonb
          WHERE id = ${row.id} AND steps = ${JSON.stringify(row.steps)}::jsonb`.execute(this.db);
        if (Number(r.numAffectedRows ?? 0) > 0) this.resealed += changed;
      }
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1]!.id;
    }
  }

  /** The OAuth server's keys (a whole JSON value each, sealed as one JSON string). */
  async oauthKeys(): Promise<void> {
    const rows = await sql<{ name: string; value: unknown }>`SELECT name, value FROM oauth_keys`.execute(this.db);
    for (const row of rows.rows) {
      const old = typeof row.value === 'string' ? row.value : JSON.stringify(row.value);
      if (!this.due(old)) continue;
      const next = this.redo(old, 'oauth_keys.value', 'oauth_keys');
      if (next === null) continue;
      const r = await sql`UPDATE oauth_keys SET value = to_jsonb(${next}::text)
        WHERE name = ${row.name} AND value = ${JSON.stringify(row.value)}::jsonb`.execute(this.db);
      this.resealed += Number(r.numAffectedRows ?? 0);
    }
  }

  /** Client secrets inside the OAuth server's Client models (none today: clients are public, PKCE). */
  async clientSecrets(): Promise<void> {
    const rows = await sql<{ id_hash: string; secret: string }>`
      SELECT id_hash, payload->>'client_secret' AS secret FROM oauth_models
      WHERE kind = 'Client' AND payload->>'client_secret' IS NOT NULL`.execute(this.db);
    for (const row of rows.rows) {
      if (!this.due(row.secret)) continue;
      const next = this.redo(row.secret, 'oauth_models.client_secret', 'oauth_models');
      if (next === null) continue;
      const r = await sql`UPDATE oauth_models SET payload = jsonb_set(payload, '{client_secret}', to_jsonb(${next}::text))
        WHERE kind = 'Client' AND id_hash = ${row.id_hash} AND payload->>'client_secret' = ${row.secret}`.execute(this.db);
      this.resealed += Number(r.numAffectedRows ?? 0);
    }
  }
}

/**
 * `plaintext`: seals what is not sealed yet (the start pass; idempotent). `rotate`: re-seals with
 * the first key whatever it did not seal, so an old key can leave SECRETS_KEYS.
 */
export async function resealAll(db: Db, ring: Keyring, mode: Mode, log: FastifyBaseLogger): Promise<ResealResult> {
  const pass = new Pass(db, ring, mode, log);
  for (const { table, columns } of COLUMNS) await pass.columns(table, columns);
  // Sends keep numbers' rows (channel/hot-reads.ts): every process reads them anew, new seals included.
  if (pass.resealed > 0) await announceChange(db, EVERY_ACCOUNT);
  await pass.stepHeaders();
  await pass.oauthKeys();
  await pass.clientSecrets();
  return { resealed: pass.resealed, missingKeyIds: [...pass.missing].sort() };
}

/**
 * The ids of the keys that sealed the values stored now, in every sealed place: one statement
 * over small tables (numbers, social accounts, webhooks, automations, the OAuth server's keys and
 * clients), so the start can say at once which are missing from the ring.
 */
export async function keyIdsInUse(db: Db): Promise<string[]> {
  const plain = COLUMNS.flatMap(({ table, columns }) =>
    columns.map((c) => sql`SELECT ${sql.ref(c)} AS v FROM ${sql.table(table)} WHERE ${sql.ref(c)} LIKE 'sealed:v1:%'`),
  );
  const { rows } = await sql<{ id: string }>`
    SELECT DISTINCT split_part(v, ':', 3) AS id FROM (
      ${sql.join(plain, sql` UNION ALL `)}
      UNION ALL SELECT 'sealed:v1:' || m[1] || ':' FROM automations, regexp_matches(steps::text, 'sealed:v1:([A-Za-z0-9_-]+):', 'g') AS m
      UNION ALL SELECT value #>> '{}' FROM oauth_keys
      UNION ALL SELECT payload->>'client_secret' FROM oauth_models WHERE kind = 'Client'
    ) AS x WHERE v LIKE 'sealed:v1:%' ORDER BY 1`.execute(db);
  return rows.map((r) => r.id);
}
