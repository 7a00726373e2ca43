// The demo account of an empty database, so a first start has something to try. `npm start` on a new
// DATA_DIR creates it and prints its key and ready curl lines (src/cli/main.ts). It goes through
// the same service functions as the operator API, so a demo row is never shaped differently.
import { sql } from 'kysely';
import { createAccount } from './accounts/service.js';
import { SYSTEM } from './audit/trail.js';
import { type AutomationInput, insertAutomation } from './automations/service.js';
import { createPipeline } from './cases/pipelines.js';
import { insertPhoneNumber } from './channel/phone-numbers.js';
import { insertSocialAccount } from './channel/social-accounts.js';
import { insertReason, type ReasonInput } from './classification/reasons.js';
import type { Db } from './db/index.js';
import { createKey } from './keys/service.js';
import { createTemplate, type NewTemplate } from './templates/service.js';

/** Advisory lock of the seed: two processes starting on one empty database seed once. */
const SEED_LOCK = 4_242_002;

export const DEMO_ACCOUNT_NAME = 'Demo';
/** The sandbox number of the demo account (the sender). */
export const DEMO_PHONE = '5491100000000';
/** A recipient for the printed curl: any number works in the sandbox except the test endings 0001–0003. */
export const DEMO_RECIPIENT = '+54 9 11 5555-0000';

export const DEMO_TEMPLATES: NewTemplate[] = [
  {
    name: 'confirmacion_pedido',
    category: 'UTILITY',
    language: 'es_AR',
    body: 'Hola {{nombre}}, tu pedido {{pedido}} está confirmado. ¡Gracias por tu compra!',
    variables: [
      { name: 'nombre', label: 'Nombre', example: 'Ana' },
      { name: 'pedido', label: 'Número de pedido', example: '1234' },
    ],
    status: 'APPROVED',
  },
  {
    name: 'promo_mensual',
    category: 'MARKETING',
    language: 'es_AR',
    body: 'Hola {{nombre}}, este mes tenés {{descuento}} de descuento. Respondé BAJA para no recibir más.',
    variables: [
      { name: 'nombre', label: 'Nombre', example: 'Ana' },
      { name: 'descuento', label: 'Descuento', example: '20 %' },
    ],
    status: 'APPROVED',
  },
];

/**
 * The demo's automation (docs/automations.md): a customer who writes "hola" is asked what product
 * interests them, the answer is kept as a contact attribute, and the conversation goes to the team
 * with a note. No `http` step: the demo calls no outside host.
 */
export const DEMO_AUTOMATION: AutomationInput = {
  name: 'Bienvenida',
  status: 'active',
  trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
  steps: [
    {
      id: 'producto',
      type: 'ask',
      text: '¡Hola! ¿Qué producto te interesa?',
      options: ['Zapatillas', 'Remeras', 'Otro'],
      save: 'producto',
    },
    { id: 'interes', type: 'set_attribute', attribute: 'producto_interes', value: '{{producto}}' },
    { id: 'gracias', type: 'send', text: 'Gracias, {{contact.name}}. Te paso con una persona del equipo para {{producto}}.' },
    { id: 'pase', type: 'handoff', note: 'Consulta por {{producto}}' },
  ],
};

/** The demo's reasons catalogue (docs/agents.md "Classification and score of cases"): what the keyword classifier picks from. */
export const DEMO_REASONS: ReasonInput[] = [
  {
    name: 'Consulta de precio',
    keywords: ['precio', 'cuanto', 'costo'],
    subreasons: [],
    scoring: { questions: [{ question: '¿Quiere comprar?', weight: 100, keywords: ['comprar', 'quiero', 'lo llevo'] }] },
  },
  { name: 'Envíos', keywords: ['envio', 'llega', 'demora'], subreasons: [], scoring: null },
  { name: 'Reclamo', keywords: ['reclamo', 'problema', 'roto'], subreasons: [], scoring: null },
];

export interface DemoSeed {
  accountId: string;
  /** The API key, shown only at creation (stored as a hash). */
  key: string;
  phoneNumberId: string;
  /** The sandbox social account (Instagram Direct through POST /admin/v1/sandbox/social-inbound). */
  socialAccountId: string;
  pipelineId: string;
  /** The active keyword automation "Bienvenida" (keyword "hola"). */
  automationId: string;
  /** A recipient for the printed POST /messages. */
  recipient: string;
  templates: { id: string; name: string; variables: Record<string, string> }[];
}

/** Creates the demo account when the database has no account at all; null otherwise. */
export async function seedDemoIfEmpty(db: Db, now: Date): Promise<DemoSeed | null> {
  const seeded = await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SEED_LOCK})`.execute(trx);
    const any = await trx.selectFrom('accounts').select('id').limit(1).executeTakeFirst();
    if (any) return null;
    const account = await createAccount(trx, { name: DEMO_ACCOUNT_NAME, plan: 'escala' }, now);
    const number = await insertPhoneNumber(
      trx,
      account.id,
      { phone: DEMO_PHONE, name: 'Demo (sandbox)', provider: 'sandbox', isDefault: true },
      now,
    );
    const social = await insertSocialAccount(trx, account.id, { name: 'Demo Instagram (sandbox)', provider: 'sandbox' }, now);
    const templates = [];
    for (const t of DEMO_TEMPLATES) {
      const row = await createTemplate(trx, account.id, t, now);
      templates.push({ id: row.id, name: row.name, variables: Object.fromEntries(t.variables.map((v) => [v.name, v.example ?? ''])) });
    }
    const pipeline = await createPipeline(
      trx,
      account.id,
      {
        name: 'Ventas',
        stages: [
          { name: 'Consulta', kind: 'open' },
          { name: 'Ganado', kind: 'won' },
          { name: 'Perdido', kind: 'lost' },
        ],
      },
      now,
    );
    // The same validation and insert as the operator API (automations/service.ts).
    // It has no http step: the private-address guard has nothing to refuse.
    const { id: automationId } = await insertAutomation(trx, account.id, DEMO_AUTOMATION, now, { refusePrivateUrls: true });
    // The same checks and insert as the operator API (classification/reasons.ts).
    for (const r of DEMO_REASONS) await insertReason(trx, account.id, r, now);
    return { account, phoneNumberId: number.id, socialAccountId: social!.id, pipelineId: pipeline.id, automationId, templates };
  });
  if (!seeded) return null;
  // createKey runs its own transaction (the plan's key maximum is checked there).
  const { key } = await createKey(db, seeded.account, 'demo', now, SYSTEM);
  return {
    accountId: seeded.account.id,
    key,
    phoneNumberId: seeded.phoneNumberId,
    socialAccountId: seeded.socialAccountId,
    pipelineId: seeded.pipelineId,
    automationId: seeded.automationId,
    recipient: DEMO_RECIPIENT,
    templates: seeded.templates,
  };
}

/** The oldest account (the demo one on an install that was seeded), for the restart hint. */
export async function firstAccount(db: Db): Promise<{ id: string; name: string } | null> {
  return (await db.selectFrom('accounts').select(['id', 'name']).orderBy('created_at').orderBy('id').limit(1).executeTakeFirst()) ?? null;
}
