// Templates from the WhatsApp Business Account: import with paging, and keep their status current
// from message_template_status_update webhooks.
import type { PhoneNumberRow, TemplateRow, TemplateVariable } from '../../db/types.js';
import { ApiError } from '../../http/errors.js';
import { variableLabels } from '../../http/messages.es-AR.js';
import type { Services } from '../../services.js';
import { applyChannelTemplateChange, saveChannelTemplates, templateView } from '../../templates/service.js';
import { notifyChangeOfRow } from '../hot-reads.js';
import { providerErrorFrom } from './errors.js';
import type { GraphClient } from './graph.js';
import { openAccessToken } from './provider.js';
import { type ParsedTemplateUpdate, type TemplateStatus, templateStatusFrom } from './webhook.js';

/** One template as Graph lists it (GET /{waba-id}/message_templates). */
export interface GraphTemplate {
  id?: string;
  name?: string;
  language?: string;
  status?: string;
  category?: string;
  parameter_format?: string;
  components?: {
    type?: string;
    format?: string;
    text?: string;
    example?: {
      body_text?: string[][];
      body_text_named_params?: { param_name?: string; example?: string }[];
      header_text?: string[];
      header_text_named_params?: { param_name?: string; example?: string }[];
    };
    buttons?: { type?: string; text?: string; url?: string; example?: string[] }[];
  }[];
}

interface GraphTemplatePage {
  data?: GraphTemplate[];
  paging?: { cursors?: { before?: string; after?: string }; next?: string };
}

export interface MappedTemplate {
  externalId: string | null;
  name: string;
  language: string;
  category: string;
  status: TemplateStatus | 'DELETED' | null;
  body: string;
  variables: TemplateVariable[];
}

const FIELDS = 'name,status,category,language,components,parameter_format';
const PAGE_SIZE = 100;
const MAX_PAGES = 200;
const CATEGORIES = new Set(['MARKETING', 'UTILITY', 'AUTHENTICATION']);

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;
const placeholders = (text: string): string[] => [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]!))];

type NamedExamples = { param_name?: string; example?: string }[] | undefined;

/**
 * Variables of a text with placeholders: positional (`{{1}}`, in number order, named by
 * `positional`) or named (`{{first_name}}`, in order of appearance), with Meta's examples.
 */
function textVariables(
  text: string,
  examples: { positional: string[] | undefined; named: NamedExamples },
  positional: (n: string) => { name: string; label: string },
): TemplateVariable[] {
  const names = placeholders(text);
  if (names.length > 0 && names.every((n) => /^\d+$/.test(n))) {
    return names
      .sort((a, b) => Number(a) - Number(b))
      .map((n) => ({ ...positional(n), example: examples.positional?.[Number(n) - 1] ?? '' }));
  }
  const named = new Map((examples.named ?? []).map((p) => [p.param_name ?? '', p.example ?? '']));
  return names.map((n) => ({ name: n, label: n.replace(/_/g, ' '), example: named.get(n) ?? '' }));
}

/** Variables of a BODY text: `{{1}}`-style (named `1`, `2`…) or named (`{{first_name}}`). */
export function bodyVariables(text: string, example?: NonNullable<GraphTemplate['components']>[number]['example']): TemplateVariable[] {
  return textVariables(text, { positional: example?.body_text?.[0], named: example?.body_text_named_params }, (n) => ({
    name: n,
    label: variableLabels.body(n),
  }));
}

/**
 * Variables of a text HEADER (api.md has one `variables` object for the whole template): a
 * positional header's `{{1}}` is `header_1` (the body's `1` is another value); a named one keeps
 * its name, so a name used in both header and body is sent once and goes to both.
 */
export function headerVariables(part: NonNullable<GraphTemplate['components']>[number] | undefined): TemplateVariable[] {
  if (!part || (part.format ?? 'TEXT').toUpperCase() !== 'TEXT' || !part.text) return [];
  const examples = { positional: part.example?.header_text, named: part.example?.header_text_named_params };
  return textVariables(part.text, examples, (n) => ({ name: `header_${n}`, label: variableLabels.header(n) })).map((v) => ({
    ...v,
    component: 'header' as const,
  }));
}

/**
 * Variables of URL buttons with a dynamic suffix (`https://…/{{1}}`): `button_<n>` for the n-th
 * button (1-based), its example the part of Meta's example URL after the fixed prefix.
 */
export function buttonVariables(part: NonNullable<GraphTemplate['components']>[number] | undefined): TemplateVariable[] {
  return (part?.buttons ?? []).flatMap((b, index) => {
    if ((b.type ?? '').toUpperCase() !== 'URL' || !b.url || placeholders(b.url).length === 0) return [];
    const prefix = b.url.slice(0, b.url.search(/\{\{/));
    const sample = b.example?.[0] ?? '';
    return [
      {
        name: `button_${index + 1}`,
        label: variableLabels.button(index + 1, b.text),
        example: sample.startsWith(prefix) ? sample.slice(prefix.length) : sample,
        component: 'button' as const,
        button: index,
      },
    ];
  });
}

export function mapGraphTemplate(t: GraphTemplate): MappedTemplate | null {
  if (!t.name || !t.language) return null;
  const part = (type: string) => (t.components ?? []).find((c) => (c.type ?? '').toUpperCase() === type);
  const bodyPart = part('BODY');
  const body = bodyPart?.text ?? '';
  const category = (t.category ?? '').toUpperCase();
  return {
    externalId: t.id ? String(t.id) : null,
    name: t.name,
    language: t.language,
    category: CATEGORIES.has(category) ? category : category || 'UTILITY',
    status: templateStatusFrom(t.status),
    body,
    variables: [...headerVariables(part('HEADER')), ...bodyVariables(body, bodyPart?.example), ...buttonVariables(part('BUTTONS'))],
  };
}

/** The template as the API shows it (decisions.md "Template"), with Meta's template id. */
export const syncedTemplateView = (t: TemplateRow) => ({ ...templateView(t), externalId: t.external_id });

/** Every template of one WABA, following `paging.next` (only on Graph's own origin: the token goes with it). */
export async function fetchWabaTemplates(graph: GraphClient, wabaId: string, token: string): Promise<GraphTemplate[]> {
  const first = `${encodeURIComponent(wabaId)}/message_templates?fields=${FIELDS}&limit=${PAGE_SIZE}`;
  const origin = new URL(graph.url(first)).origin;
  const out: GraphTemplate[] = [];
  let next: string | null = first;
  for (let pages = 0; next && pages < MAX_PAGES; pages++) {
    const page: GraphTemplatePage | null = await graph.call<GraphTemplatePage>('GET', next, token);
    out.push(...(page?.data ?? []));
    const nextUrl: string | undefined = page?.paging?.next;
    const after: string | undefined = page?.paging?.cursors?.after;
    if (nextUrl && safeNext(nextUrl, origin)) next = nextUrl;
    else if (nextUrl && after) next = `${first}&after=${encodeURIComponent(after)}`;
    else next = null;
    if ((page?.data ?? []).length === 0) next = null;
  }
  return out;
}

function safeNext(url: string, origin: string): boolean {
  try {
    return new URL(url).origin === origin;
  } catch {
    return false;
  }
}

export interface SyncResult {
  imported: number;
  updated: number;
  templates: ReturnType<typeof syncedTemplateView>[];
}

/** POST /admin/v1/accounts/{id}/templates/sync: import every template of the account's WABAs. */
export async function syncTemplates(s: Services, graph: GraphClient, accountId: string): Promise<SyncResult> {
  const account = await s.db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst();
  if (!account) throw new ApiError('account_not_found');
  const numbers = await s.db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('provider', '=', 'cloud')
    .where('cloud_waba_id', 'is not', null)
    .where('cloud_access_token', 'is not', null)
    .orderBy('id')
    .execute();
  if (numbers.length === 0) throw new ApiError('cloud_no_number');

  // One fetch per WABA (several numbers may share one), outside any transaction.
  const byWaba = new Map<string, PhoneNumberRow>();
  for (const n of numbers) if (!byWaba.has(n.cloud_waba_id!)) byWaba.set(n.cloud_waba_id!, n);
  const fetched: MappedTemplate[] = [];
  for (const [wabaId, n] of byWaba) {
    let list: GraphTemplate[];
    try {
      list = await fetchWabaTemplates(graph, wabaId, openAccessToken(s, n)!);
    } catch (err) {
      const pe = providerErrorFrom(err);
      s.log.warn({ accountId, wabaId, code: pe.code, kind: pe.kind }, 'cloud template sync failed');
      throw new ApiError('cloud_sync_failed', { params: { reason: pe.reason } });
    }
    for (const t of list) {
      const m = mapGraphTemplate(t);
      if (m) fetched.push(m);
    }
  }

  const { imported, updated, rows } = await saveChannelTemplates(s.db, accountId, fetched, s.clock.now());
  // This process at once; the others when the transaction's notification reaches them (hot-reads.ts).
  s.hotReads.forget(accountId);
  s.log.info({ accountId, imported, updated }, 'cloud templates synced');
  return { imported, updated, templates: rows.map(syncedTemplateView) };
}

/**
 * A message_template_status_update (or template_category_update) webhook: updates the template of
 * every account whose cloud number belongs to that WABA, by Meta's id or else by name + language.
 * Returns how many templates changed.
 */
export async function applyTemplateUpdate(s: Services, accountIds: string[], u: ParsedTemplateUpdate): Promise<number> {
  const category = u.category && CATEGORIES.has(u.category.toUpperCase()) ? u.category.toUpperCase() : null;
  const change = { templateId: u.templateId || null, name: u.name || null, language: u.language || null, status: u.status, category };
  const changed = await applyChannelTemplateChange(s.db, accountIds, change, s.clock.now());
  for (const id of accountIds) s.hotReads.forget(id);
  return changed;
}

/** What Graph answers a template creation (POST /{waba-id}/message_templates). */
interface GraphCreated {
  id?: string;
  status?: string;
  category?: string;
}

/**
 * A template created on an account with a Cloud API number goes to Meta for review (docs/cloud.md
 * "Templates"): POST /{waba-id}/message_templates of the account's default Cloud number's WABA,
 * with named parameters and each variable's example. The stored row takes Meta's id, status and
 * category; its review then moves by webhook (message_template_status_update) or `templates/sync`.
 * Answers the row as it is now, or null when the account has no Cloud number (nothing to submit).
 * If Meta refuses it, the local row is removed and the answer is a 502 with Meta's reason.
 */
export async function submitTemplate(s: Services, graph: GraphClient, row: TemplateRow): Promise<TemplateRow | null> {
  const number = await s.db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('account_id', '=', row.account_id)
    .where('provider', '=', 'cloud')
    .where('cloud_waba_id', 'is not', null)
    .where('cloud_access_token', 'is not', null)
    .orderBy('is_default', 'desc')
    .orderBy('id')
    .executeTakeFirst();
  if (!number) return null;
  const body = {
    name: row.name,
    language: row.language,
    category: row.category,
    parameter_format: 'named',
    components: [
      {
        type: 'BODY',
        text: row.body,
        ...(row.variables.length > 0
          ? { example: { body_text_named_params: row.variables.map((v) => ({ param_name: v.name, example: v.example || v.label })) } }
          : {}),
      },
    ],
  };
  let created: GraphCreated | null;
  try {
    created = await graph.call<GraphCreated>(
      'POST',
      `${encodeURIComponent(number.cloud_waba_id!)}/message_templates`,
      openAccessToken(s, number)!,
      body,
    );
  } catch (err) {
    const pe = providerErrorFrom(err);
    s.log.warn({ accountId: row.account_id, templateId: row.id, code: pe.code, kind: pe.kind }, 'cloud template refused');
    await s.db.deleteFrom('templates').where('id', '=', row.id).execute();
    throw new ApiError('cloud_template_refused', { params: { reason: pe.reason } });
  }
  const category = (created?.category ?? '').toUpperCase();
  return s.db
    .updateTable('templates')
    .set({
      external_id: created?.id ? String(created.id) : null,
      status: templateStatusFrom(created?.status) ?? 'PENDING',
      category: CATEGORIES.has(category) ? category : row.category,
      updated_at: s.clock.now(),
    })
    .where('id', '=', row.id)
    .returningAll()
    .returning(notifyChangeOfRow().as('notified'))
    .executeTakeFirstOrThrow();
}
