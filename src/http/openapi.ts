// The two OpenAPI 3.1 documents, cut from the one that @fastify/swagger builds from the route
// schemas (docs/operating.md, "API reference"):
// - /api/v1/openapi.json (and the /docs page): the customer API only, bearer API key, Spanish
//   error bodies with examples, rate-limit headers, Idempotency-Key and the webhook events.
// - /admin/v1/openapi.json (operator token, like every /admin/v1 path): the operator API, the
//   sandbox and the channel receivers, under their own security scheme `operatorToken`.
// Customers integrate against the first; keys, numbers and webhooks are managed "in the app"
// (api.md §4), so the operator routes are kept out of it on purpose.
import { canonicalPhone } from '../lib/phone.js';
import { EVENT_KINDS } from '../webhooks/outbox.js';
import { textFor } from './messages.es-AR.js';

type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

const PUBLIC_TAGS: Record<string, string> = {
  Account: 'The account of the key: plan, effective limits, usage of the quota month, channel numbers.',
  Templates: 'Message templates approved by the channel (created and approved in the app).',
  Contacts: 'Contacts by phone, with free-form text attributes usable as filters and template variables.',
  Conversations: "A contact's conversations on each number: the 24-hour window, who handles it, its messages.",
  Messages: 'Send templates and free text; follow the delivery status.',
  Campaigns: 'Bulk sends of a template to an audience, with their counters.',
  Cases: 'Pipelines and cases: one customer inquiry each, with reason, stage and outcome.',
  Automations: 'Flows that answer customers: start one for a phone, read its executions; an incoming webhook per flow.',
  Agents: 'AI agents that answer customers (created and configured in the app): who they are and which version.',
};

const OPERATOR_TAGS: Record<string, string> = {
  Operator:
    "The operator API (/admin/v1): what the app does for an account. Bearer ADMIN_TOKEN; the console calls the account routes with a member's session cookie and X-Chasqui-CSRF instead (docs/console.md).",
  'Operator: webhooks': 'Webhook URLs, their secrets and the delivery log.',
  'Operator: members': 'The people of an account who log in to the console (docs/console.md), their roles and invites.',
  Sandbox: 'The built-in sandbox channel: a customer writes, the provider reports a status.',
  channel: 'Receivers called by the WhatsApp Cloud API (signed with X-Hub-Signature-256; no bearer token).',
};

const phoneCheck = canonicalPhone('12');
/** A real validation text of the phone check, for the 400 example. */
const PHONE_PROBLEM = phoneCheck.ok ? '' : phoneCheck.message;

/** What each error status means on /api/v1, with an example of the Spanish body. */
const ERRORS: Record<string, { description: string; examples: Record<string, Json> }> = {
  '400': {
    description: 'Invalid body, query or path. `error.message` is the JSON text of [{path, message}] (docs/api.md §7).',
    examples: {
      validation: {
        value: {
          error: { message: JSON.stringify([{ path: ['phone'], message: PHONE_PROBLEM }]) },
          cause: null,
        },
      },
      invalid_json: { value: { error: textFor('invalid_json'), cause: null } },
    },
  },
  '401': {
    description: 'Missing, misspelled or revoked key (every 401 counts toward the IP block).',
    examples: { unauthorized: { value: { error: textFor('unauthorized'), cause: null } } },
  },
  '402': {
    description: 'The plan lacks the feature (`cause.reason: plan`) or a maximum was reached (`cause.reason: limit`).',
    examples: {
      plan: {
        value: {
          error: textFor('plan_without_api', { plan: 'crecimiento' }),
          cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: 'crecimiento', limit: null, used: null, suggested: 'escala' },
        },
      },
      limit: {
        value: {
          error: textFor('contact_limit', { limit: 100000 }),
          cause: {
            type: 'upgrade',
            reason: 'limit',
            resource: 'contacts',
            plan: 'escala',
            limit: 100000,
            used: 100000,
            suggested: 'enterprise',
          },
        },
      },
    },
  },
  '404': {
    description: 'Not found in the account of the key.',
    examples: { not_found: { value: { error: textFor('not_found'), cause: null } } },
  },
  '409': {
    description:
      'The request is valid but the state does not allow it (window closed, template not approved, no connected number, opted out, case closed, Idempotency-Key in progress).',
    examples: {
      window_closed: { value: { error: textFor('window_closed'), cause: null } },
      idempotency_in_progress: { value: { error: textFor('idempotency_in_progress'), cause: null } },
    },
  },
  '413': { description: 'Body over 1 MiB.', examples: { body_too_large: { value: { error: textFor('body_too_large'), cause: null } } } },
  '415': {
    description: 'Body not sent as application/json.',
    examples: { unsupported_media_type: { value: { error: textFor('unsupported_media_type'), cause: null } } },
  },
  '422': {
    description: 'The Idempotency-Key was used with a different body.',
    examples: { idempotency_mismatch: { value: { error: textFor('idempotency_mismatch'), cause: null } } },
  },
  '429': {
    description:
      'Minute cap of requests or of messages (`Retry-After: 60`), monthly quota (`cause.reason: limit`), the IP is blocked after more than 20 invalid keys in a minute, or (POST /messages) the sending number is at its throughput tier: no free moment within 2 s (`Retry-After` in seconds, `messageId` of the message stored failed).',
    examples: {
      requests: { value: { error: textFor('rate_limited_requests', { limit: 300 }), cause: null } },
      messages: { value: { error: textFor('rate_limited_messages', { limit: 60 }), cause: null } },
      number_throughput: {
        value: { error: textFor('number_throughput', { limit: 80 }), cause: null, messageId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' },
      },
      ip_blocked: { value: { error: textFor('ip_blocked'), cause: null } },
    },
  },
  '500': {
    description: 'Unexpected error; the body carries `requestId` (also in the X-Request-Id header).',
    examples: { internal: { value: { error: textFor('internal'), cause: null, requestId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' } } },
  },
  '502': {
    description: 'The channel provider rejected the message, or could not take it now (temporary: retry later).',
    examples: { provider_rejected: { value: { error: textFor('provider_rejected', { reason: 'número inválido' }), cause: null } } },
  },
  '503': {
    description: 'The service cannot reach its database right now; retry in a few seconds.',
    examples: { database_unavailable: { value: { error: textFor('database_unavailable'), cause: null } } },
  },
};

const int = { type: 'integer' };
const RATE_HEADERS: Json = {
  'X-Request-Id': { description: 'Id of this request (quote it when asking for help)', schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'Requests per minute of the plan', schema: int },
  'X-RateLimit-Remaining': { description: 'Requests left in this minute', schema: int },
  'X-RateLimit-Reset': { description: 'Seconds to the next minute window', schema: int },
};

const INFO_DESCRIPTION = `Send template and free-text WhatsApp messages, keep contacts, read templates, campaigns and pipeline cases, and receive signed webhook events.

**Authentication**: \`Authorization: Bearer etk_live_…\` (keys are created in the app, or by the operator: \`npx chasqui keys create\`). Missing, misspelled or revoked key → 401.

**Errors** are \`{"error": string, "cause": object|null}\` with texts in Argentine Spanish, meant to be shown as they are. Order of checks: IP block (429) → key (401) → plan (402) → minute caps (429) → monthly quota (429) → validation and handler.

**Limits**: every authenticated answer carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`, \`X-RateLimit-Reset\` (and the IETF \`RateLimit-Policy\` / \`RateLimit\` pair). A minute-cap 429 has \`Retry-After: 60\`.

**Safe retries**: send an \`Idempotency-Key\` header (1–255 characters) on POST /messages and POST /contacts; the same key and body within 24 h replays the first answer (\`Idempotent-Replayed: true\`).

**Webhooks** (see *Webhooks* below): Standard Webhooks signatures (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`), at-least-once, retried for about 3 days; dedupe on \`webhook-id\`.`;

const IDEMPOTENCY_HEADER = {
  in: 'header',
  name: 'Idempotency-Key',
  required: false,
  description: 'Makes the request safe to retry: the same key with the same body within 24 h replays the first answer.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/** POST routes that accept Idempotency-Key (decisions.md). */
const IDEMPOTENT = new Set(['post /api/v1/messages', 'post /api/v1/contacts']);

function envelope(kind: string): Json {
  return {
    post: {
      summary: `Event ${kind}`,
      description:
        'POSTed to each registered URL subscribed to this kind. Verify the signature with any Standard Webhooks library (the secret is whsec_…), answer 2xx within 15 s, dedupe on webhook-id. `data` keys: docs/api.md §6.',
      parameters: [
        {
          in: 'header',
          name: 'webhook-id',
          required: true,
          schema: { type: 'string' },
          description: 'The envelope id, the same on every retry',
        },
        {
          in: 'header',
          name: 'webhook-timestamp',
          required: true,
          schema: { type: 'string' },
          description: 'Unix seconds of this attempt',
        },
        {
          in: 'header',
          name: 'webhook-signature',
          required: true,
          schema: { type: 'string' },
          description: 'v1,<base64 HMAC-SHA256 of "id.timestamp.body"> (several, space-separated, while a secret rotates)',
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['id', 'event', 'createdAt', 'data'],
              properties: {
                id: { type: 'string', format: 'uuid' },
                event: { type: 'string', const: kind },
                createdAt: { type: 'string', description: 'ISO 8601 UTC with milliseconds' },
                data: { type: 'object', description: 'Over 262,144 bytes: {truncated: true, id: null, size}' },
                ...(kind === 'message.received' ? { test: { type: 'boolean', description: 'true on the test event' } } : {}),
              },
            },
          },
        },
      },
      responses: { '200': { description: 'Any 2xx acknowledges the event; 410 disables the URL; other answers are retried.' } },
    },
  };
}

function operations(paths: Json): [string, string, Json][] {
  const out: [string, string, Json][] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const m of METHODS) if (item[m]) out.push([path, m, item[m]]);
  }
  return out;
}

function pick(paths: Json, keep: (path: string) => boolean): Json {
  return Object.fromEntries(Object.entries(paths).filter(([p]) => keep(p)));
}

function tagList(paths: Json, known: Record<string, string>): { name: string; description?: string }[] {
  const seen = new Set<string>();
  for (const [, , op] of operations(paths)) for (const t of op.tags ?? []) seen.add(t);
  const order = [...Object.keys(known).filter((t) => seen.has(t)), ...[...seen].filter((t) => !(t in known))];
  return order.map((name) => (known[name] ? { name, description: known[name] } : { name }));
}

/** The customer document (/api/v1/openapi.json and /docs). `full` is a fresh copy it may change. */
export function publicDocument(full: Json): Json {
  const paths = pick(full.paths ?? {}, (p) => p.startsWith('/api/v1/') || p.startsWith('/hooks/'));
  for (const [path, method, op] of operations(paths)) {
    op.security ??= [{ bearer: [] }];
    if (IDEMPOTENT.has(`${method} ${path}`) && !(op.parameters ?? []).some((p: Json) => p.name === 'Idempotency-Key')) {
      op.parameters = [...(op.parameters ?? []), IDEMPOTENCY_HEADER];
    }
    for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
      const e = ERRORS[status];
      if (e) {
        res.description = e.description;
        const media = res.content?.['application/json'];
        if (media) media.examples ??= e.examples;
        if (status === '429')
          res.headers = {
            'Retry-After': {
              description: 'Seconds to wait (60 on a minute cap; 1 or more when the number is at its throughput tier)',
              schema: int,
            },
          };
      } else if (status.startsWith('2')) {
        res.headers = { ...RATE_HEADERS, ...(res.headers ?? {}) };
      }
    }
    // Every route can meet these: the HTTP layer and the database, not the route, produce them.
    for (const status of ['500', '503'] as const) {
      op.responses[status] ??= {
        description: ERRORS[status]!.description,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples: ERRORS[status]!.examples } },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { ...full.info, description: INFO_DESCRIPTION },
    servers: full.servers,
    security: [{ bearer: [] }],
    tags: tagList(paths, PUBLIC_TAGS),
    paths,
    webhooks: Object.fromEntries(EVENT_KINDS.map((k) => [k, envelope(k)])),
    components: {
      ...full.components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key: etk_live_ followed by at least 32 random characters' },
      },
      schemas: {
        ...(full.components?.schemas ?? {}),
        Error: {
          type: 'object',
          required: ['error', 'cause'],
          description: 'Error body (docs/api.md §7): Argentine Spanish text, meant to be shown as is',
          properties: {
            error: { anyOf: [{ type: 'string' }, { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }] },
            cause: { type: ['object', 'null'] },
            requestId: { type: 'string', description: 'Only on 500' },
          },
        },
      },
    },
  };
}

/** The operator document (/admin/v1/openapi.json): operator API, sandbox, channel receivers. */
export function operatorDocument(full: Json): Json {
  const paths = pick(full.paths ?? {}, (p) => p.startsWith('/admin/v1/') || p.startsWith('/channels/'));
  for (const [path, , op] of operations(paths)) {
    if (path.startsWith('/admin/v1/')) op.security = [{ operatorToken: [] }];
    const res401 = {
      description: 'Missing or wrong operator token',
      content: { 'application/json': { example: { error: textFor('admin_unauthorized'), cause: null } } },
    };
    if (path.startsWith('/admin/v1/')) op.responses['401'] ??= res401;
  }
  return {
    openapi: '3.1.0',
    info: {
      ...full.info,
      title: 'Chasqui — operator API',
      description:
        'What the app does for an account: accounts, keys, numbers, templates, webhooks, pipelines, cases, campaigns, jobs and the sandbox channel (docs/operator.md). Also reachable from the CLI: `npx chasqui --help`. The customer API is at /api/v1/openapi.json.',
    },
    servers: full.servers,
    security: [{ operatorToken: [] }],
    tags: tagList(paths, OPERATOR_TAGS),
    paths,
    components: {
      schemas: full.components?.schemas ?? {},
      securitySchemes: {
        operatorToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN (generated into DATA_DIR/admin-token when unset)' },
      },
    },
  };
}
