// The repository stands alone: docs/api.md and docs/operator.md name exactly the endpoints the
// server serves (compared with its two OpenAPI documents), and README.md and docs/ point at nothing
// outside the repository.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, request, startTestApp, type TestApp } from '../harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** The endpoints a doc declares: its `### METHOD /path` headings. */
function headings(markdown: string): string[] {
  return [...markdown.matchAll(/^### (GET|POST|PUT|PATCH|DELETE) (\/\S*)\s*$/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

/** Every other "METHOD /absolute/path" a doc mentions in its text and tables. */
function mentions(markdown: string): string[] {
  const re = /\b(GET|POST|PUT|PATCH|DELETE) (\/(?:api\/v1|admin\/v1|channels)\/[^\s`?),;:|]*|\/healthz|\/readyz|\/metrics|\/docs)/g;
  return [...new Set([...markdown.matchAll(re)].map((m) => `${m[1]} ${m[2]}`))];
}

/** The operations of an OpenAPI document, as "METHOD /path". */
const operations = (doc: { paths: Record<string, Record<string, unknown>> }): string[] =>
  Object.entries(doc.paths)
    .flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();

/** Served outside the OpenAPI documents (health checks, metrics and the documents themselves). */
const UNLISTED = ['GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /docs', 'GET /api/v1/openapi.json', 'GET /admin/v1/openapi.json'];

/** README.md and every file of docs/. */
const userDocs = (): string[] => [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

let app: TestApp;
let publicOps: string[];
let operatorOps: string[];
let servedText: string;

beforeAll(async () => {
  app = await startTestApp();
  const pub = await request(`${app.url}/api/v1/openapi.json`, 'GET');
  const op = await request(`${app.url}/admin/v1/openapi.json`, 'GET', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });
  expect(pub.status).toBe(200);
  expect(op.status).toBe(200);
  publicOps = operations(pub.body);
  operatorOps = operations(op.body);
  servedText = JSON.stringify([pub.body, op.body]);
});
afterAll(() => app?.close());

describe('docs/api.md and docs/operator.md match what the server serves', () => {
  it('"each endpoint has a heading of the form ### METHOD /path" (docs/api.md): exactly the operations of /api/v1/openapi.json', () => {
    expect(publicOps.length).toBeGreaterThan(10);
    expect(headings(read('docs/api.md'))).toEqual(publicOps);
  });

  it('"each endpoint has a heading of the form ### METHOD /path" (docs/operator.md): exactly the operations of /admin/v1/openapi.json, /channels receivers included', () => {
    expect(operatorOps).toContain('POST /channels/whatsapp/webhook');
    expect(headings(read('docs/operator.md'))).toEqual(operatorOps);
  });

  it('every "METHOD /path" the two docs mention in their text is served: an OpenAPI operation, or a health/reference route that answers 200', async () => {
    const known = new Set([...publicOps, ...operatorOps]);
    const unknown: string[] = [];
    for (const doc of ['docs/api.md', 'docs/operator.md']) {
      for (const m of mentions(read(doc))) if (!known.has(m) && !UNLISTED.includes(m)) unknown.push(`${doc}: ${m}`);
    }
    expect(unknown).toEqual([]);
    for (const route of UNLISTED) {
      const path = route.slice('GET '.length);
      const operator = path.startsWith('/admin/') || path === '/metrics';
      const headers: Record<string, string> = operator ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {};
      const res = await fetch(`${app.url}${path}`, { headers });
      expect(res.status, route).toBe(200);
    }
  });
});

describe('the repository stands alone', () => {
  it('"nothing in README.md or docs/ refers to a file outside the repository": no ../shared, no shared/spec', () => {
    const offenders = userDocs().filter((f) => /\.\.\/shared|shared\/spec/.test(read(f)));
    expect(userDocs()).toContain('docs/api.md');
    expect(offenders).toEqual([]);
  });

  it('"nothing in the served docs page refers to a file outside the repository": every *.md both OpenAPI documents cite is a file of docs/', () => {
    const cited = [...new Set(servedText.match(/[\w./-]+\.md\b/g) ?? [])];
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter((f) => !f.startsWith('docs/') || !existsSync(join(ROOT, f)))).toEqual([]);
  });

  it('every relative link of README.md and docs/ points at a file that exists inside the repository', () => {
    const broken: string[] = [];
    for (const file of userDocs()) {
      for (const [, target] of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith('#')) continue;
        const abs = resolve(dirname(join(ROOT, file)), target!.split('#')[0]!);
        const inside = !relative(ROOT, abs).startsWith('..');
        if (!inside || !existsSync(abs)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
