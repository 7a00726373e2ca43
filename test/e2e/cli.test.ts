// The newcomer flow and the CLI (issue 2: "Start like a product"; operator.md "CLI").
//
// The CLI runs as a real child process: `node --import tsx src/cli/main.ts …`. Not the built
// dist/cli/main.js, on purpose: `npm test` in CI has no build step, a stale or half-written dist
// (another process building at the same time) would test old code, and a tsc build inside the
// test costs 20–45 s on a small machine. tsx runs the same sources on the same Node in one
// process (signals reach the server directly). To check the built CLI instead (what `npm start`
// runs), build first and set CHASQUI_TEST_DIST=1.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listMigrations } from '../../src/db/migrate.js';
import { textFor } from '../../src/http/messages.es-AR.js';
import { ADMIN_TOKEN, dropPostgresDatabase, freshPhone, freshPostgresDatabase, request, startTestApp, type TestApp } from '../harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const USE_DIST = process.env.CHASQUI_TEST_DIST === '1';
const CLI = USE_DIST ? [join(ROOT, 'dist/cli/main.js')] : ['--import', 'tsx', join(ROOT, 'src/cli/main.ts')];

/** Data directories of the servers and commands this file runs, removed when it ends. */
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The environment of a newcomer: nothing of the test runner's database, Redis or token. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['DATABASE_URL', 'REDIS_URL', 'ADMIN_TOKEN', 'SEED_DEMO', 'PORT', 'HOST', 'DATA_DIR', 'CHASQUI_URL', 'NODE_ENV'])
    delete env[k];
  return { ...env, ...extra };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** True when nothing listens on the port any more (a connection is refused). */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.on('connect', () => {
      c.destroy();
      resolve(false);
    });
    c.on('error', () => resolve(true));
  });

/** Runs one CLI command to its end. */
function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...CLI, ...args], { cwd: ROOT, env: cleanEnv(env), timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const sq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
let npxDir: string | undefined;
/** A folder holding an `npx` that runs this CLI on the Node under test: `npx chasqui …` → CLI. */
function npxShim(): string {
  if (npxDir) return npxDir;
  npxDir = tempDir('chasqui-npx-');
  const run = [process.execPath, ...CLI].map(sq).join(' ');
  writeFileSync(join(npxDir, 'npx'), `#!/bin/sh\n[ "$1" = chasqui ] || exit 127\nshift\nexec ${run} "$@"\n`, { mode: 0o755 });
  return npxDir;
}

/** Runs a printed command line as a person pastes it in another terminal: sh, its env prefix, its quoting. */
function runPrinted(line: string): Promise<Run> {
  const env = cleanEnv({});
  env.PATH = `${npxShim()}:${env.PATH}`;
  return new Promise((resolve) => {
    execFile('sh', ['-c', line], { cwd: ROOT, env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

interface Server_ {
  proc: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Starts `chasqui serve` and resolves once the banner is complete (it is one write). */
async function serve(env: Record<string, string>, until: RegExp): Promise<Server_ & { banner: string }> {
  const proc = spawn(process.execPath, [...CLI, 'serve'], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => {
    out += d;
  });
  proc.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner in 60 s: ${out} ${err}`)), 60_000);
    proc.stdout!.on('data', () => {
      if (!until.test(out)) return;
      clearTimeout(timer);
      resolve();
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code}: ${err}`));
    });
  });
  return { proc, out: () => out, exited, banner: out };
}

/** Runs a printed curl line as the person would paste it (sh + curl), or as fetch without curl. */
async function runCurl(line: string): Promise<{ status: number; body: any }> {
  if (existsSync('/usr/bin/curl') || existsSync('/bin/curl')) {
    const out = await new Promise<string>((resolve, reject) =>
      execFile('sh', ['-c', `${line} -w '\\n%{http_code}'`], (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    const i = out.lastIndexOf('\n');
    return { status: Number(out.slice(i + 1)), body: JSON.parse(out.slice(0, i)) };
  }
  // Minimal shell words: '…' and "…" quoting, as printed by the banner.
  const words = [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
  const headers: Record<string, string> = {};
  let url = '';
  let data: string | undefined;
  let method: string | undefined;
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    if (w === '-H') {
      const [k, ...v] = words[++i]!.split(':');
      headers[k!.trim()] = v.join(':').trim();
    } else if (w === '-d') data = words[++i];
    else if (w === '-X') method = words[++i];
    else if (!w.startsWith('-')) url = w;
  }
  const res = await request(url, method ?? (data ? 'POST' : 'GET'), data, headers);
  return { status: res.status, body: res.body };
}

const api = (base: string, key: string, method: string, path: string, body?: unknown) =>
  request(`${base}/api/v1${path}`, method, body, { authorization: `Bearer ${key}` });

describe('npm start: first start on an empty DATA_DIR, restart, SIGTERM', () => {
  const dataDir = tempDir('chasqui-cli-');
  // At info, as a newcomer runs it: the start-up's log lines share stdout with the banner.
  const env = { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SANDBOX_AUTO_STATUS: 'off' };
  let first: Awaited<ReturnType<typeof serve>>;
  let base: string;
  let key: string;
  let demoAccountId: string;
  let msToFirstCurl = 0;

  afterAll(async () => {
    first?.proc.kill('SIGKILL');
    await first?.exited;
  });

  it('prints where it listens, the operator token, the demo etk_live_ key and curl lines that work (GET /me 200, POST /messages 201)', async () => {
    const t0 = Date.now();
    first = await serve(env, /\/api\/v1\/messages.*\n/);
    const banner = first.banner;
    base = banner.match(/listening on (http:\/\/\S+)/)![1]!;
    expect(banner).toContain(`PGlite in ${dataDir}/pglite`);
    expect(banner).toMatch(/Operator token \(kept in .*admin-token\): adm_\S+/);
    key = banner.match(/etk_live_[A-Za-z0-9_-]{32,}/)![0];
    const curls = banner.split('\n').filter((l) => l.trim().startsWith('curl '));
    expect(curls).toHaveLength(2);

    const me = await runCurl(curls[0]!.trim());
    msToFirstCurl = Date.now() - t0;
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ name: 'Demo', plan: 'escala' });
    expect(me.body.phoneNumbers).toEqual([expect.objectContaining({ provider: 'sandbox', status: 'connected', default: true })]);
    demoAccountId = me.body.id;

    const sent = await runCurl(curls[1]!.trim());
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(sent.body).toMatchObject({ status: 'sent', type: 'template' });
    // The printed variables are exactly the seeded template's variables.
    const printed = JSON.parse(curls[1]!.match(/-d '(.*)'$/)![1]!);
    const templates = await api(base, key, 'GET', '/templates');
    const tpl = templates.body.data.find((t: any) => t.id === printed.template.id);
    expect(tpl.status).toBe('APPROVED');
    expect(Object.keys(printed.template.variables).sort()).toEqual(tpl.variables.map((v: any) => v.name).sort());
    expect(sent.body.template.variables).toEqual(printed.template.variables);
    const got = await api(base, key, 'GET', `/messages/${sent.body.id}`);
    expect(got.status).toBe(200);
    console.info(`npm start → first successful curl: ${msToFirstCurl} ms (${USE_DIST ? 'dist' : 'tsx'})`);
  }, 90_000);

  it('the banner is readable at LOG_LEVEL=info: one block with no JSON log line inside, after the start-up log lines, naming the demo account id', () => {
    const lines = first.banner.split('\n');
    const start = lines.findIndex((l) => l.startsWith('Chasqui listening on'));
    const end = lines.findLastIndex((l) => l.trim().startsWith('curl '));
    expect(start).toBeGreaterThanOrEqual(0);
    const block = lines.slice(start, end + 1);
    expect(block.filter((l) => l.trim().startsWith('{'))).toEqual([]);
    // Fastify's own start-up line was logged before the banner, and is printed before it.
    expect(lines.slice(0, start).some((l) => l.includes('"msg":"Server listening at'))).toBe(true);
    expect(block).toContain(
      `Demo account ${demoAccountId} created (plan escala, a sandbox number, 2 approved templates, pipeline "Ventas").`,
    );
  });

  it('the demo account has plan escala, two APPROVED templates, a pipeline with open/won/lost stages and a sandbox social account', async () => {
    const templates = await api(base, key, 'GET', '/templates');
    expect(templates.body.data).toHaveLength(2);
    expect(templates.body.data.every((t: any) => t.status === 'APPROVED')).toBe(true);
    const pipelines = await api(base, key, 'GET', '/pipelines');
    expect(pipelines.body.data).toHaveLength(1);
    expect(pipelines.body.data[0].stages.map((s: any) => s.kind)).toEqual(['open', 'won', 'lost']);
    // social.md "Sandbox": the demo account has a sandbox social account to write to.
    const token = first.banner.match(/Operator token \(kept in .*admin-token\): (adm_\S+)/)![1]!;
    const social = await request(`${base}/admin/v1/accounts/${demoAccountId}/social-accounts`, 'GET', undefined, {
      authorization: `Bearer ${token}`,
    });
    expect(social.body.data).toEqual([expect.objectContaining({ provider: 'sandbox', status: 'connected' })]);
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
  });

  it('README quick start: the customer writes "hola" → the demo automation Bienvenida asks the product; answers "1" → the team gets the conversation (handed_off, note, attribute)', async () => {
    const automations = await api(base, key, 'GET', '/automations');
    expect(automations.body.data).toEqual([
      expect.objectContaining({
        name: 'Bienvenida',
        status: 'active',
        trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
      }),
    ]);
    const automationId = automations.body.data[0].id;
    // The CLI as the README runs it: the server's DATA_DIR holds the operator token.
    const env = { DATA_DIR: dataDir, CHASQUI_URL: base };
    const ok = (r: Run) => {
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    const phone = freshPhone();
    const inbound = ok(await cli(['sandbox', 'inbound', demoAccountId, phone, 'Hola, ¿tienen envío?', '--name', 'Ana'], env));
    // Runs what is due now to rest (the runner also polls on its own): no sleeping.
    ok(await cli(['jobs', 'run', 'automations'], env));
    const asked = await api(base, key, 'GET', `/conversations/${inbound.conversationId}/messages`);
    expect(asked.body.data.map((m: any) => m.text)).toEqual([
      'Hola, ¿tienen envío?',
      '¡Hola! ¿Qué producto te interesa?\n\n1. Zapatillas\n2. Remeras\n3. Otro',
    ]);
    ok(await cli(['sandbox', 'inbound', demoAccountId, phone, '1'], env));
    ok(await cli(['jobs', 'run', 'automations'], env));
    const executions = ok(await cli(['automations', 'executions', demoAccountId, automationId], env));
    const execution = executions.data.find((e: any) => e.conversationId === inbound.conversationId);
    expect(execution).toMatchObject({ status: 'handed_off', variables: { producto: 'Zapatillas', respuesta: 'Zapatillas' } });
    const after = await api(base, key, 'GET', `/conversations/${inbound.conversationId}/messages`);
    expect(after.body.data.at(-1).text).toBe('Gracias, Ana. Te paso con una persona del equipo para Zapatillas.');
    const conversation = await api(base, key, 'GET', `/conversations/${inbound.conversationId}`);
    expect(conversation.body.handling).toMatchObject({ type: 'team' });
    const notes = ok(await cli(['conversations', 'notes', demoAccountId, inbound.conversationId], env));
    expect(notes.data.map((n: any) => n.text)).toEqual(['Consulta por Zapatillas']);
    const contact = await api(base, key, 'GET', `/contacts/${inbound.contactId}`);
    expect(contact.body.attributes).toMatchObject({ producto_interes: 'Zapatillas' });
  }, 60_000);

  it('SIGTERM: stops accepting, finishes the in-flight request (201), exits 0 promptly', async () => {
    const port = Number(new URL(base).port);
    const body = JSON.stringify({ phone: freshPhone(), name: 'En vuelo' });
    const sock = connect(port, '127.0.0.1');
    let answer = '';
    sock.on('data', (d) => {
      answer += d;
    });
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    const continued = new Promise<void>((r) => sock.on('data', () => answer.includes('100 Continue') && r()));
    // Expect: 100-continue makes the server say when it has the request (headers parsed).
    sock.write(
      `POST /api/v1/contacts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await continued;
    sock.write(body.slice(0, 10));

    const t0 = Date.now();
    first.proc.kill('SIGTERM');
    // The listener closes: a new connection is refused while the old one is still served.
    await expect.poll(() => refused(port), { timeout: 10_000, interval: 50 }).toBe(true);
    sock.write(body.slice(10));
    await closed;
    expect(answer).toMatch(/HTTP\/1\.1 201 Created/);
    expect(answer).toContain('"name":"En vuelo"');
    const code = await first.exited;
    const ms = Date.now() - t0;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(10_000);
    console.info(`SIGTERM → exit 0 in ${ms} ms with one in-flight request finished`);
  }, 60_000);

  it('restart on the same DATA_DIR: no second demo account, no key printed, a hint that makes a key', async () => {
    const again = await serve(env, /Other accounts: .*\n/);
    try {
      expect(again.banner).not.toMatch(/Demo account created/);
      expect(again.banner).not.toMatch(/etk_live_/);
      const base2 = again.banner.match(/listening on (http:\/\/\S+)/)![1]!;
      const hint = again.banner.split('\n').find((l) => /npx chasqui keys create/.test(l))!;
      expect(hint).toContain(`keys create ${demoAccountId} `);
      // Another PORT and DATA_DIR than the CLI's defaults: the printed commands carry them.
      const prefix = `PORT=${new URL(base2).port} DATA_DIR=${dataDir} npx chasqui`;
      expect(hint.trim()).toBe(`${prefix} keys create ${demoAccountId} mi-integracion`);
      // Run the hint as printed (its env prefix), in a shell with none of the server's environment.
      const made = await runPrinted(hint.trim());
      expect(made.code, made.stderr).toBe(0);
      const newKey = JSON.parse(made.stdout).key as string;
      expect(newKey).toMatch(/^etk_live_/);
      const me = await api(base2, newKey, 'GET', '/me');
      expect(me.status).toBe(200);
      expect(me.body.id).toBe(demoAccountId);
      const others = again.banner.match(/^Other accounts: (.*)$/m)![1]!;
      expect(others).toBe(`${prefix} accounts list`);
      const accounts = await runPrinted(others);
      expect(accounts.code, accounts.stderr).toBe(0);
      expect(JSON.parse(accounts.stdout).data).toHaveLength(1);
      // The curl alternative of the hint works too.
      const curlHint = again.banner.split('\n').find((l) => l.trim().startsWith('curl -s -X POST'))!;
      const viaCurl = await runCurl(curlHint.trim());
      expect(viaCurl.status).toBe(201);
    } finally {
      again.proc.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    }
  }, 90_000);
});

describe('an empty DATA_DIR without the demo, and --help (another PORT and DATA_DIR than the defaults)', () => {
  it('the banner\'s "Create one:" command works as printed: it carries PORT and DATA_DIR', async () => {
    const dataDir = tempDir('chasqui-empty-');
    const server = await serve({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', SEED_DEMO: 'off' }, /No accounts yet.*\n/);
    try {
      const port = new URL(server.banner.match(/listening on (http:\/\/\S+)/)![1]!).port;
      const create = server.banner.match(/Create one: (.*) \(then keys create and numbers add\)\.$/m)![1]!;
      expect(create).toBe(`PORT=${port} DATA_DIR=${dataDir} npx chasqui accounts create "Mi empresa" --plan escala`);
      const made = await runPrinted(create);
      expect(made.code, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout)).toMatchObject({ name: 'Mi empresa', plan: 'escala' });
    } finally {
      server.proc.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }
  }, 90_000);

  it('--help says where the operator commands find the server and the token: PORT, DATA_DIR, CHASQUI_URL, ADMIN_TOKEN', async () => {
    const help = await cli(['--help'], {});
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('http://127.0.0.1:$PORT');
    expect(help.stdout).toMatch(/^ {2}PORT +the server's port \(default 3000\)/m);
    expect(help.stdout).toMatch(/^ {2}DATA_DIR +.*admin-token \(default \.\/data\)/m);
    expect(help.stdout).toMatch(/^ {2}CHASQUI_URL /m);
    expect(help.stdout).toMatch(/^ {2}ADMIN_TOKEN /m);
    expect(help.stdout).toContain('PORT=3001 DATA_DIR=/tmp/chasqui npx chasqui accounts list');
  });
});

describe('npm start under a process manager', () => {
  it("the `node` on PATH (what `npm start` runs) is the Node running the tests (CI's Node 24 run puts its bin first)", async () => {
    const version = await new Promise<string>((resolve, reject) =>
      execFile('node', ['--version'], { env: cleanEnv({}) }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))),
    );
    expect(version).toBe(process.version);
  });

  it('SIGTERM sent to `npm start` reaches the server: it shuts down and its port closes (the script execs Node)', async () => {
    const dataDir = tempDir('chasqui-npm-start-');
    // Exactly what a user runs: the prestart build (a few seconds), then the server.
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: cleanEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SEED_DEMO: 'off' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout!.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => npm.on('exit', (code) => r(code)));
    await expect.poll(() => /listening on http:\/\/\S+/.test(out), { timeout: 80_000, interval: 100 }).toBe(true);
    const port = Number(new URL(out.match(/listening on (http:\/\/\S+)/)![1]!).port);
    npm.kill('SIGTERM');
    await exited;
    // npm forwards the signal to the server, which may still be busy starting its workers on a loaded
    // machine: its line can come a while after npm's own exit (seen at 5 s in a CI run under load).
    await expect.poll(() => out.includes('shutting down'), { timeout: 30_000, interval: 50 }).toBe(true);
    await expect.poll(() => refused(port), { timeout: 10_000, interval: 50 }).toBe(true);
  }, 120_000);
});

describe('chasqui migrate', () => {
  const all = listMigrations().map((m) => m.version);

  it('applies every migration to a fresh embedded database, then says it is up to date', async () => {
    const dataDir = tempDir('chasqui-mig-');
    const first = await cli(['migrate'], { DATA_DIR: dataDir });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim()).toBe(`Applied: ${all.join(', ')}`);
    const second = await cli(['migrate'], { DATA_DIR: dataDir });
    expect(second.stdout.trim()).toBe('Database is up to date.');
  }, 60_000);

  it.skipIf(!inject('databaseUrl'))(
    'applies every migration to a fresh PostgreSQL database (DATABASE_URL)',
    async () => {
      const url = await freshPostgresDatabase(inject('databaseUrl')!);
      try {
        const first = await cli(['migrate'], { DATABASE_URL: url });
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout.trim()).toBe(`Applied: ${all.join(', ')}`);
        const second = await cli(['migrate'], { DATABASE_URL: url });
        expect(second.stdout.trim()).toBe('Database is up to date.');
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        const tables = await c.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`);
        await c.end();
        expect(tables.rows[0].n).toBeGreaterThan(10);
      } finally {
        await dropPostgresDatabase(url);
      }
    },
    60_000,
  );
});

describe('operator commands against a running server (operator.md)', () => {
  let app: TestApp;
  let env: Record<string, string>;
  let receiver: Server;
  let received = 0;
  const json = (r: Run) => {
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    app = await startTestApp();
    env = { CHASQUI_URL: app.url, ADMIN_TOKEN };
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received += 1;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    await app?.close();
    receiver?.close();
  });

  it('accounts, keys, numbers and templates: what the CLI creates works on the public API', async () => {
    const acc = json(await cli(['accounts', 'create', 'Tienda CLI', '--plan', 'escala'], env));
    expect(acc).toMatchObject({ name: 'Tienda CLI', plan: 'escala' });
    const key = json(await cli(['keys', 'create', acc.id, 'integracion'], env));
    expect(key.key).toMatch(/^etk_live_/);
    const ours = freshPhone({ spelling: 'spaced' });
    const pn = json(await cli(['numbers', 'add', acc.id, ours, '--name', 'Principal', '--provider', 'sandbox'], env));
    expect(pn).toMatchObject({ phone: ours.replace(/\D/g, ''), status: 'connected', default: true });
    const tpl = json(
      await cli(
        ['templates', 'add', acc.id, 'bienvenida', '--category', 'UTILITY', '--body', 'Hola {{nombre}}', '--var', 'nombre:Nombre=Ana'],
        env,
      ),
    );
    expect(tpl).toMatchObject({ status: 'PENDING', variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }] });
    const approved = json(await cli(['templates', 'update', acc.id, tpl.id, '--status', 'APPROVED'], env));
    expect(approved.status).toBe('APPROVED');
    const sent = await app.api(key.key, 'POST', '/messages', {
      to: freshPhone(),
      template: { id: tpl.id, variables: { nombre: 'Eva' } },
    });
    expect(sent.status).toBe(201);
    // The sandbox provider reports a status: the real status machine moves it.
    const st = await cli(['sandbox', 'status', sent.body.wamid, 'delivered'], env);
    expect(st.code, st.stderr).toBe(0);
    expect((await app.api(key.key, 'GET', `/messages/${sent.body.id}`)).body.status).toBe('delivered');

    const updated = json(await cli(['accounts', 'update', acc.id, '--limits', '{"contacts": 5}'], env));
    expect(updated.limits.contacts).toBe(5);
    const got = json(await cli(['accounts', 'get', acc.id], env));
    expect(got.phoneNumbers).toHaveLength(1);
    const keys = json(await cli(['keys', 'list', acc.id], env));
    expect(keys.data.map((k: any) => k.id)).toContain(key.id);
    expect(JSON.stringify(keys)).not.toContain(key.key);

    const del = await cli(['templates', 'delete', acc.id, tpl.id], env);
    expect(del).toMatchObject({ code: 0, stdout: '' });
    const revoke = await cli(['keys', 'revoke', acc.id, key.id], env);
    expect(revoke.code).toBe(0);
    expect((await app.api(key.key, 'GET', '/me')).status).toBe(401);
  }, 120_000);

  it('"npx chasqui members add <accountId> <email> --role owner [--name …] prints the invite link"; members list', async () => {
    const acc = await app.createAccount();
    const email = `cli-${Date.now()}@example.com`;
    const made = json(await cli(['members', 'add', acc.id, email, '--role', 'owner', '--name', 'Dueña'], env));
    expect(made.member).toMatchObject({ email, name: 'Dueña', role: 'owner', status: 'invited' });
    expect(made.inviteUrl).toMatch(/\/console\/invite\/[A-Za-z0-9_-]{40,}$/);
    const token = (made.inviteUrl as string).split('/').at(-1);
    const set = await fetch(`${app.url}/console/api/invites/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'una-clave-larga-123' }),
    });
    expect(set.status).toBe(204);
    const list = json(await cli(['members', 'list', acc.id], env));
    expect(list.data).toEqual([expect.objectContaining({ id: made.member.id, status: 'active' })]);
    const last = await cli(['members', 'remove', acc.id, made.member.id], env);
    expect(last.code).toBe(1);
    expect(last.stderr).toContain(textFor('last_owner'));
  }, 60_000);

  it('pipelines, sandbox inbound and cases close/reason; campaigns create; jobs run', async () => {
    const acc = await app.createAccount();
    const p = json(
      await cli(
        ['pipelines', 'create', acc.id, 'Soporte', '--stage', 'Abierto:open', '--stage', 'Resuelto:won', '--stage', 'Perdido:lost'],
        env,
      ),
    );
    expect(p.stages.map((s: any) => s.kind)).toEqual(['open', 'won', 'lost']);
    const inbound = json(await cli(['sandbox', 'inbound', acc.id, freshPhone(), 'Hola, quiero info', '--name', 'Beto'], env));
    expect(inbound).toMatchObject({ contactId: expect.any(String), conversationId: expect.any(String) });
    const cases = await acc.call('GET', `/pipelines/${p.id}/cases`);
    expect(cases.body.data).toHaveLength(1);
    const caseId = cases.body.data[0].id;
    const reasoned = json(await cli(['cases', 'reason', acc.id, caseId, 'Consulta de precio', '--by-id', 'u1', '--by-name', 'Ana'], env));
    expect(reasoned).toMatchObject({ reasonSource: 'person', reasonSetBy: { id: 'u1', name: 'Ana' } });
    const closed = json(await cli(['cases', 'close', acc.id, caseId], env));
    expect(closed).toMatchObject({ status: 'closed', closeReason: 'manual' });

    const tpl = await app.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'promo',
      category: 'MARKETING',
      body: 'Hola {{nombre}}',
      variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
      status: 'APPROVED',
    });
    const campaign = json(await cli(['campaigns', 'create', acc.id, 'Promo CLI', tpl.body.id, '--var', 'nombre=cliente'], env));
    expect(campaign).toMatchObject({ name: 'Promo CLI' });
    const ran = json(await cli(['jobs', 'run', 'case-timeouts'], env));
    expect(ran).toMatchObject({ ran: 'case-timeouts', changed: expect.any(Number) });
  }, 120_000);

  it('webhooks add/list/update/test/rotate-secret/deliveries/delete', async () => {
    const acc = await app.createAccount();
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    const wh = json(await cli(['webhooks', 'add', acc.id, url, '--events', 'message.received,message.status'], env));
    expect(wh).toMatchObject({ url, events: ['message.received', 'message.status'], enabled: true });
    expect(wh.secret).toMatch(/^whsec_/);
    expect(json(await cli(['webhooks', 'list', acc.id], env)).data).toHaveLength(1);
    const test = await cli(['webhooks', 'test', acc.id, wh.id], env);
    expect(test.code, test.stderr).toBe(0);
    json(await cli(['jobs', 'run', 'webhooks'], env));
    const deliveries = json(await cli(['webhooks', 'deliveries', acc.id, wh.id, '--limit', '10'], env));
    expect(deliveries.data).toHaveLength(1);
    expect(deliveries.data[0]).toMatchObject({ event: 'message.received', status: 'succeeded' });
    expect(received).toBeGreaterThan(0);
    const one = json(await cli(['webhooks', 'deliveries', acc.id, wh.id, deliveries.data[0].id], env));
    expect(one.attemptLog.length).toBeGreaterThan(0);
    const rotated = json(await cli(['webhooks', 'rotate-secret', acc.id, wh.id], env));
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(wh.secret);
    const off = json(await cli(['webhooks', 'update', acc.id, wh.id, '--disable', '--events', 'all'], env));
    expect(off).toMatchObject({ enabled: false, events: null });
    expect(await cli(['webhooks', 'delete', acc.id, wh.id], env)).toMatchObject({ code: 0, stdout: '' });
    expect(json(await cli(['webhooks', 'list', acc.id], env)).data).toHaveLength(0);
  }, 120_000);

  it('automations create --file and list: "POST /accounts/{id}/automations (name, status, trigger, steps, phoneNumberId) → 201; GET list" (operator.md "CLI"), and the rest of the flow through the CLI', async () => {
    const acc = await app.createAccount();
    const dir = tempDir('chasqui-flow-');
    const file = join(dir, 'flow.json');
    const flow = {
      name: 'Talles',
      trigger: { type: 'keyword', keywords: ['talle'], match: 'contains' },
      steps: [
        { id: 'talle', type: 'ask', text: '¿Qué talle buscás?', save: 'talle' },
        { id: 'fin', type: 'end' },
      ],
    };
    writeFileSync(file, JSON.stringify(flow));
    const created = json(await cli(['automations', 'create', acc.id, '--file', file], env));
    expect(created).toMatchObject({ name: 'Talles', status: 'draft', trigger: { type: 'keyword', keywords: ['talle'] }, webhookUrl: null });
    // Defaults are written into the stored steps, as the operator API stores them.
    expect(created.steps[0]).toMatchObject({ id: 'talle', type: 'ask', timeoutMinutes: 1440 });
    const listed = json(await cli(['automations', 'list', acc.id], env));
    expect(listed.data.map((a: any) => a.id)).toEqual([created.id]);
    expect(json(await cli(['automations', 'get', acc.id, created.id], env)).steps).toEqual(created.steps);

    // A flow with a problem: the server's 400 as it wrote it, with the path, exit code 1.
    writeFileSync(file, JSON.stringify({ ...flow, steps: [{ id: 'x', type: 'send', text: 'Hola', next: 'nada' }] }));
    const bad = await cli(['automations', 'create', acc.id, '--file', file], env);
    expect(bad.code).toBe(1);
    expect(JSON.parse(JSON.parse(bad.stderr).error.message)[0].path).toEqual(['steps', 0, 'next']);

    expect(json(await cli(['automations', 'activate', acc.id, created.id], env)).status).toBe('active');
    const inbound = json(await cli(['sandbox', 'inbound', acc.id, freshPhone(), '¿Tienen otro talle?', '--name', 'Ema'], env));
    const running = json(await cli(['automations', 'executions', acc.id, created.id, '--status', 'running'], env));
    expect(running.data).toEqual([expect.objectContaining({ conversationId: inbound.conversationId, status: 'running' })]);
    // A team member's reply cancels the running execution.
    const reply = json(
      await cli(['conversations', 'reply', acc.id, inbound.conversationId, '--text', 'Hola Ema, te ayudo yo.', '--by-name', 'Laura'], env),
    );
    expect(reply).toMatchObject({ text: 'Hola Ema, te ayudo yo.' });
    const one = json(await cli(['automations', 'executions', acc.id, created.id, running.data[0].id], env));
    expect(one).toMatchObject({ status: 'cancelled', steps: expect.any(Array) });
    expect(json(await cli(['automations', 'pause', acc.id, created.id], env)).status).toBe('paused');
    expect(await cli(['automations', 'delete', acc.id, created.id], env)).toMatchObject({ code: 0, stdout: '' });
    expect(json(await cli(['automations', 'list', acc.id], env)).data).toEqual([]);
  }, 120_000);

  it('agents create --file, list, get, update, test, delete, numbers update --agent and apps connect/list/disconnect: the operator API through the CLI (operator.md "CLI")', async () => {
    const acc = await app.createAccount();
    const dir = tempDir('chasqui-agent-');
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ name: 'Ventas', instructions: 'Sos la vendedora.', maxTurns: 5 }));
    const created = json(await cli(['agents', 'create', acc.id, '--file', file], env));
    expect(created).toMatchObject({ name: 'Ventas', status: 'paused', version: '1', maxTurns: 5 });
    expect(json(await cli(['agents', 'list', acc.id], env)).data.map((a: any) => a.id)).toEqual([created.id]);
    writeFileSync(file, JSON.stringify({ instructions: 'Sos la vendedora de yerba.' }));
    const changed = json(await cli(['agents', 'update', acc.id, created.id, '--file', file, '--name', 'Ventas 2'], env));
    expect(changed).toMatchObject({ name: 'Ventas 2', version: '2', instructions: 'Sos la vendedora de yerba.' });
    expect(json(await cli(['agents', 'get', acc.id, created.id], env)).version).toBe('2');
    // AI apps (MCP): connect prints the token once; list has none; disconnect.
    const connected = json(await cli(['apps', 'connect', acc.id, 'Claude de Ana'], env));
    expect(connected.token).toMatch(/^etk_app_/);
    expect(json(await cli(['apps', 'list', acc.id], env)).data).toEqual([expect.not.objectContaining({ token: expect.anything() })]);
    expect(await cli(['apps', 'disconnect', acc.id, connected.id], env)).toMatchObject({ code: 0 });
    const assigned = json(await cli(['numbers', 'update', acc.id, acc.phoneNumberId, '--agent', created.id], env));
    expect(assigned.agentId).toBe(created.id);
    expect(json(await cli(['numbers', 'update', acc.id, acc.phoneNumberId, '--agent', 'none'], env)).agentId).toBeNull();
    // This server has no model: a test turn is refused with the server's 409, exit code 1.
    const test = await cli(['agents', 'test', acc.id, created.id, 'Hola'], env);
    expect(test.code).toBe(1);
    expect(test.stderr).toContain('LLM_BASE_URL');
    expect(await cli(['agents', 'delete', acc.id, created.id], env)).toMatchObject({ code: 0 });
    expect(json(await cli(['agents', 'list', acc.id], env)).data).toEqual([]);
  }, 120_000);

  it('agents reviews and rerun-review: the review routes through the CLI (operator.md "CLI")', async () => {
    const acc = await app.createAccount();
    const dir = tempDir('chasqui-agent-');
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ name: 'Ventas', review: { criteria: [{ name: 'saludo', kind: 'pass_fail' }], extract: [] } }));
    const created = json(await cli(['agents', 'create', acc.id, '--file', file], env));
    expect(json(await cli(['agents', 'reviews', acc.id, created.id, '--limit', '5'], env))).toEqual({
      data: [],
      hasMore: false,
      nextCursor: null,
    });
    const missing = '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e';
    const r = await cli(['agents', 'rerun-review', acc.id, created.id, missing], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('No encontramos esa revisión para este agente. Revisá los ids.');
  }, 120_000);

  it('social add/list/update/delete and sandbox social-inbound: the social accounts through the CLI (operator.md "CLI")', async () => {
    const acc = await app.createAccount();
    const added = json(await cli(['social', 'add', acc.id, 'Instagram de la tienda'], env));
    expect(added).toMatchObject({ name: 'Instagram de la tienda', provider: 'sandbox', status: 'connected', agentId: null });
    expect(json(await cli(['social', 'list', acc.id], env)).data.map((a: any) => a.id)).toEqual([added.id]);
    const renamed = json(await cli(['social', 'update', acc.id, added.id, '--name', 'IG', '--status', 'disconnected'], env));
    expect(renamed).toMatchObject({ name: 'IG', status: 'disconnected' });
    const wrote = json(await cli(['sandbox', 'social-inbound', added.id, '1790000000000001', 'Hola', '--username', 'caro.mate'], env));
    expect(wrote).toMatchObject({ duplicate: false });
    const contact = await api(app.url, acc.key, 'GET', `/contacts/${wrote.contactId}`);
    expect(contact.body).toMatchObject({ phone: null, name: 'caro.mate', socialchat: { id: '1790000000000001', username: 'caro.mate' } });
    expect(await cli(['social', 'delete', acc.id, added.id], env)).toMatchObject({ code: 0 });
    expect(json(await cli(['social', 'list', acc.id], env)).data).toEqual([]);
  }, 60_000);

  it('a server error is printed as the server wrote it, exit code 1', async () => {
    const missing = '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e';
    const r = await cli(['accounts', 'get', missing], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const direct = await fetch(`${app.url}/admin/v1/accounts/${missing}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(r.stderr).toBe(`${await direct.text()}\n`);
    expect(JSON.parse(r.stderr).error).toBe('No existe esa cuenta.');
    // Validation errors too (Spanish, with the path).
    const bad = await cli(['accounts', 'create', 'X', '--plan', 'gratis'], env);
    expect(bad.code).toBe(1);
    expect(JSON.parse(JSON.parse(bad.stderr).error.message)[0].path).toEqual(['plan']);
  }, 60_000);

  it('server and token: --url/--token flags, DATA_DIR/admin-token, and clear errors without them', async () => {
    const viaFlags = await cli(['accounts', 'list', '--url', app.url, '--token', ADMIN_TOKEN], {});
    expect(viaFlags.code, viaFlags.stderr).toBe(0);
    const dir = tempDir('chasqui-tok-');
    writeFileSync(join(dir, 'admin-token'), `${ADMIN_TOKEN}\n`);
    const viaFile = await cli(['accounts', 'list'], { DATA_DIR: dir, CHASQUI_URL: app.url });
    expect(viaFile.code, viaFile.stderr).toBe(0);
    expect(JSON.parse(viaFile.stdout).data.length).toBeGreaterThan(0);

    const wrong = await cli(['accounts', 'list', '--token', 'not-the-token-0123456789'], { CHASQUI_URL: app.url });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stderr).error).toMatch(/token de operador/);
    const none = await cli(['accounts', 'list'], { DATA_DIR: tempDir('chasqui-none-'), CHASQUI_URL: app.url });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/ADMIN_TOKEN/);
    const down = await cli(['accounts', 'list', '--url', 'http://127.0.0.1:9', '--token', 'x'], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/Could not reach Chasqui/);
  }, 60_000);
});
