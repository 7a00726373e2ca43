// The API reference: OpenAPI 3.1 at /api/v1/openapi.json, the /docs page, and the operator
// document at /admin/v1/openapi.json (docs/operating.md "API reference").
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
let doc: any;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const ops = (d: any): [string, string, any][] =>
  Object.entries<any>(d.paths).flatMap(([p, item]) => METHODS.filter((m) => item[m]).map((m): [string, string, any] => [p, m, item[m]]));

/** Follows a local $ref (#/components/…) and fails when it points nowhere. */
function resolve(d: any, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .reduce((o: any, k) => (o === undefined ? undefined : o[k.replaceAll('~1', '/').replaceAll('~0', '~')]), d);
}

function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refs(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

beforeAll(async () => {
  app = await startTestApp();
  const res = await request(`${app.url}/api/v1/openapi.json`, 'GET');
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => app?.close());

describe('OpenAPI 3.1 document of the customer API', () => {
  it('is an OpenAPI 3.1.0 document with info, servers, bearer security and tags', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toMatch(/Chasqui/);
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(doc.info.description).toMatch(/Authorization: Bearer etk_live_/);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
    const tagNames = doc.tags.map((t: any) => t.name);
    expect(tagNames).toEqual(expect.arrayContaining(['Account', 'Templates', 'Contacts', 'Messages', 'Campaigns', 'Cases']));
    for (const t of doc.tags) expect(t.description, t.name).toBeTruthy();
  });

  it('documents every endpoint of api.md §4 and the ones decisions.md adds', () => {
    const expected = {
      // api.md §4
      '/api/v1/me': ['get'],
      '/api/v1/templates': ['get'],
      '/api/v1/contacts': ['post', 'get'],
      '/api/v1/messages': ['post'],
      '/api/v1/messages/{id}': ['get'],
      '/api/v1/campaigns': ['get'],
      '/api/v1/pipelines/{id}/cases': ['get'],
      // decisions.md "Added endpoints"
      '/api/v1/contacts/{id}': ['get'],
      '/api/v1/templates/{id}': ['get'],
      '/api/v1/campaigns/{id}': ['get'],
      '/api/v1/pipelines': ['get'],
      '/api/v1/cases/{id}': ['get'],
      '/api/v1/cases/{id}/outcome': ['post'],
      '/api/v1/cases/{id}/stage': ['post'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      for (const m of methods) expect(doc.paths[path]?.[m], `${m.toUpperCase()} ${path}`).toBeDefined();
    }
  });

  it('lists every /api/v1 route the server answers, and nothing of the operator API', () => {
    // The routes Fastify really has (printRoutes draws the router's tree, 4 characters a level):
    // each /api/v1 one must be documented.
    const stack: string[] = [];
    const served: { path: string; methods: string[] }[] = [];
    for (const line of app.rt.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = line.match(/^([\s│]*)[├└]── (\S+)(?: \(([^)]*)\))?/);
      if (!m) continue;
      const depth = m[1]!.length / 4;
      stack.length = depth;
      const path = (stack[depth - 1] ?? '') + m[2];
      stack.push(path);
      if (m[3] && path.startsWith('/api/v1/')) served.push({ path: path.replace(/:(\w+)/g, '{$1}'), methods: m[3].split(', ') });
    }
    expect(served.length).toBeGreaterThan(10);
    for (const r of served) {
      if (r.path === '/api/v1/openapi.json') continue;
      for (const m of r.methods.filter((x) => x !== 'HEAD')) {
        expect(doc.paths[r.path]?.[m.toLowerCase()], `${m} ${r.path} is served but not documented`).toBeDefined();
      }
    }
    // Besides /api/v1, only the automations' incoming webhook (its token is its key).
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/api/v1/'))).toEqual(['/hooks/automations/{token}']);
  });

  it('gives every operation a summary, a tag, bearer security, a 2xx JSON schema and Spanish error bodies', () => {
    for (const [path, method, op] of ops(doc)) {
      const name = `${method.toUpperCase()} ${path}`;
      expect(op.summary, name).toBeTruthy();
      expect(op.tags?.length, name).toBeGreaterThan(0);
      const hook = path.startsWith('/hooks/');
      expect(op.security ?? doc.security, name).toEqual(hook ? [] : [{ bearer: [] }]);
      const ok = Object.keys(op.responses).filter((s) => s.startsWith('2'));
      expect(ok.length, name).toBeGreaterThan(0);
      for (const s of ok) {
        expect(op.responses[s].content['application/json'].schema, `${name} ${s}`).toBeTruthy();
        expect(op.responses[s].headers['X-RateLimit-Remaining'], `${name} ${s}`).toBeDefined();
      }
      // api.md §5: every key-protected endpoint answers 401 (and 429 for the IP block).
      for (const s of hook ? ['404', '429'] : ['401', '429']) {
        const res = op.responses[s];
        expect(res, `${name} ${s}`).toBeDefined();
        const media = res.content['application/json'];
        expect(media.schema, `${name} ${s}`).toBeTruthy();
        const example = Object.values<any>(media.examples)[0].value;
        expect(typeof example.error).toBe('string');
        expect(example).toHaveProperty('cause');
      }
      // Path parameters are declared and required.
      for (const [, p] of path.matchAll(/\{(\w+)\}/g)) {
        const param = (op.parameters ?? []).find((x: any) => x.in === 'path' && x.name === p);
        expect(param?.required, `${name} {${p}}`).toBe(true);
      }
    }
    // Bodies on POST, with their schema.
    const posts = ops(doc).filter(([, method]) => method === 'post');
    expect(posts.length).toBeGreaterThan(0);
    for (const [path, , op] of posts) expect(op.requestBody?.content?.['application/json']?.schema, `POST ${path}`).toBeTruthy();
  });

  it('documents the error body of api.md §7 in Argentine Spanish ("Revisá…", "Probá…")', () => {
    const send = doc.paths['/api/v1/messages'].post;
    expect(send.responses['401'].content['application/json'].examples.unauthorized.value.error).toMatch(
      /Revisá el encabezado Authorization/,
    );
    const plan = send.responses['402'].content['application/json'].examples.plan.value;
    expect(plan.cause).toMatchObject({ type: 'upgrade', reason: 'plan' });
    const validation = send.responses['400'].content['application/json'].examples.validation.value;
    expect(JSON.parse(validation.error.message)[0].path).toEqual(['phone']);
    expect(send.responses['409'].content['application/json'].examples.window_closed.value.error).toMatch(/plantilla aprobada/);
    expect(send.responses['429'].headers['Retry-After']).toBeDefined();
    expect(doc.components.schemas.Error.required).toEqual(['error', 'cause']);
  });

  it('documents the request and response of POST /messages (api.md §4 and decisions.md "Message record")', () => {
    const send = doc.paths['/api/v1/messages'].post;
    const body = send.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['to', 'text', 'template', 'phoneNumberId']));
    expect(body.required).toEqual(['to']);
    const record = send.responses['201'].content['application/json'].schema;
    expect(Object.keys(record.properties)).toEqual(
      expect.arrayContaining(['id', 'wamid', 'status', 'to', 'contactId', 'conversationId', 'phoneNumberId', 'type', 'statusTimes']),
    );
    // decisions.md: optional Idempotency-Key on POST /messages and POST /contacts.
    for (const p of ['/api/v1/messages', '/api/v1/contacts']) {
      expect(
        doc.paths[p].post.parameters.some((x: any) => x.in === 'header' && x.name === 'Idempotency-Key'),
        p,
      ).toBe(true);
    }
    const cases = doc.paths['/api/v1/pipelines/{id}/cases'].get.parameters.map((x: any) => x.name);
    expect(cases).toEqual(expect.arrayContaining(['stage', 'status', 'limit', 'offset']));
  });

  it('documents every webhook event kind of api.md §6 with the envelope {id, event, createdAt, data}', () => {
    for (const kind of [
      'message.received',
      'message.status',
      'contact.created',
      'contact.opted_out',
      'campaign.completed',
      'case.opened',
    ]) {
      const schema = doc.webhooks[kind]?.post?.requestBody?.content?.['application/json']?.schema;
      expect(schema?.required, kind).toEqual(['id', 'event', 'createdAt', 'data']);
      expect(doc.webhooks[kind].post.parameters.map((p: any) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    }
  });

  it('is well formed: every $ref resolves, operation ids are unique, and every schema compiles as JSON Schema 2020-12', () => {
    for (const r of refs(doc)) {
      expect(r.startsWith('#/'), r).toBe(true);
      expect(resolve(doc, r), r).toBeDefined();
    }
    const ids = ops(doc)
      .map(([, , op]) => op.operationId)
      .filter(Boolean);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [path, method, op] of ops(doc)) {
      expect(
        Object.keys(op.responses).every((s) => /^[1-5]\d\d$|^default$/.test(s)),
        `${method} ${path}`,
      ).toBe(true);
    }
    // OpenAPI 3.1 schemas are JSON Schema 2020-12 (plus `example`, which is an annotation).
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const schemas: unknown[] = [];
    for (const [, , op] of ops(doc)) {
      for (const media of Object.values<any>(op.requestBody?.content ?? {})) schemas.push(media.schema);
      for (const res of Object.values<any>(op.responses))
        for (const media of Object.values<any>(res.content ?? {})) schemas.push(media.schema);
      for (const p of op.parameters ?? []) schemas.push(p.schema);
    }
    expect(schemas.length).toBeGreaterThan(50);
    for (const s of schemas) {
      const withRefs = JSON.parse(JSON.stringify(s).replaceAll('"#/components/', '"doc#/components/'));
      expect(() => ajv.compile(withRefs)).not.toThrow();
    }
  });

  it('validates a real response against its documented schema (GET /me, POST /messages 201)', async () => {
    const acc = await app.createAccount();
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const me = await acc.call('GET', '/me');
    expect(me.status).toBe(200);
    const meSchema = doc.paths['/api/v1/me'].get.responses['200'].content['application/json'].schema;
    expect(ajv.validate(meSchema, me.body), JSON.stringify(ajv.errors)).toBe(true);
    const sent = await acc.call('POST', '/messages', { to: freshPhone(), text: 'hola' });
    // Free text outside the window: 409 with the documented error body.
    expect(sent.status).toBe(409);
    const errSchema = doc.paths['/api/v1/messages'].post.responses['409'].content['application/json'].schema;
    expect(ajv.validate(errSchema, sent.body), JSON.stringify(ajv.errors)).toBe(true);
  });
});

describe('the /docs page and the operator document', () => {
  it('/docs answers 200 HTML and its UI loads the customer document', async () => {
    const page = await fetch(`${app.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/<html/i);
    const ui = await request(`${app.url}/docs/json`, 'GET');
    expect(ui.status).toBe(200);
    expect(Object.keys(ui.body.paths).sort()).toEqual(Object.keys(doc.paths).sort());
  });

  it('the operator API has its own document behind the operator token, with its own security scheme', async () => {
    const anon = await request(`${app.url}/admin/v1/openapi.json`, 'GET');
    expect(anon.status).toBe(401);
    const res = await request(`${app.url}/admin/v1/openapi.json`, 'GET', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(res.status).toBe(200);
    const op = res.body;
    expect(op.openapi).toBe('3.1.0');
    expect(op.components.securitySchemes.operatorToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    // operator.md paths.
    for (const [path, method] of [
      ['/admin/v1/accounts', 'post'],
      ['/admin/v1/accounts/{id}/keys', 'post'],
      ['/admin/v1/accounts/{id}/webhooks/{wid}/deliveries', 'get'],
      ['/admin/v1/jobs/{name}/run', 'post'],
      ['/admin/v1/sandbox/inbound', 'post'],
    ] as const) {
      const o = op.paths[path]?.[method];
      expect(o, `${method} ${path}`).toBeDefined();
      expect(o.security).toEqual([{ operatorToken: [] }]);
      expect(o.summary, `${method} ${path}`).toBeTruthy();
      expect(o.tags?.length).toBeGreaterThan(0);
    }
    expect(Object.keys(op.paths).some((p) => p.startsWith('/api/v1/'))).toBe(false);
  });
});
