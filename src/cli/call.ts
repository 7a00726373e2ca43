// What every operator command shares: the server and token it calls, the call itself, and the
// option parsers. Server: --url, else CHASQUI_URL, else http://127.0.0.1:$PORT (3000). Token:
// --token, else ADMIN_TOKEN, else DATA_DIR/admin-token (written by the server's first start).
// Results are printed as JSON on stdout; a server error is printed on stderr exactly as the server
// wrote it (Spanish text, api.md §7) and the command exits with 1.
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';

interface Target {
  base: string;
  token: string;
}

type Globals = { url?: string; token?: string };

export class CliError extends Error {}

function target(globals: Globals): Target {
  const base = (globals.url ?? process.env.CHASQUI_URL ?? `http://127.0.0.1:${process.env.PORT ?? '3000'}`).replace(/\/+$/, '');
  let token = globals.token ?? process.env.ADMIN_TOKEN;
  if (!token) {
    const file = `${process.env.DATA_DIR ?? './data'}/admin-token`;
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch {
      throw new CliError(
        `No operator token: pass --token, set ADMIN_TOKEN, or run where ${file} exists (the server writes it on its first start; set DATA_DIR to the server's).`,
      );
    }
  }
  return { base, token };
}

/** Calls the operator API and prints the result; sets exit code 1 on an error answer. */
export async function call(cmd: Command, method: string, path: string, body?: unknown): Promise<void> {
  const { base, token } = target(cmd.optsWithGlobals<Globals>());
  let res: Response;
  try {
    res = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const code = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new CliError(`Could not reach Chasqui at ${base} (${code}). Is it running (npm start)? Otherwise pass --url or set CHASQUI_URL.`);
  }
  const text = await res.text();
  if (!res.ok) {
    // As the server wrote it: the Spanish text is meant to be shown as is.
    process.stderr.write(`${text || `HTTP ${res.status}`}\n`);
    process.exitCode = 1;
    return;
  }
  if (!text) return; // 204: done, nothing to print
  try {
    process.stdout.write(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
  } catch {
    process.stdout.write(`${text}\n`);
  }
}

// ---- option parsers ------------------------------------------------------------------------

export function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('not valid JSON.');
  }
}

export function jsonObject(value: string): Record<string, unknown> {
  const v = json(value);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError('expected a JSON object.');
  return v as Record<string, unknown>;
}

/** Repeatable `key=value` → {key: value}. */
export function pair(value: string, acc: Record<string, string> = {}): Record<string, string> {
  const i = value.indexOf('=');
  if (i <= 0) throw new InvalidArgumentError('use key=value.');
  return { ...acc, [value.slice(0, i)]: value.slice(i + 1) };
}

/** Repeatable `name:kind` (pipeline stages). */
export function stage(value: string, acc: { name: string; kind: string }[] = []): { name: string; kind: string }[] {
  const i = value.lastIndexOf(':');
  if (i <= 0) throw new InvalidArgumentError('use name:kind, e.g. Consulta:open, Ganado:won, Perdido:lost.');
  return [...acc, { name: value.slice(0, i), kind: value.slice(i + 1) }];
}

/** Repeatable `name=example` or `name:label=example` (template variables). */
export function variable(value: string, acc: { name: string; label: string; example: string }[] = []) {
  const i = value.indexOf('=');
  if (i <= 0) throw new InvalidArgumentError('use name=example or name:label=example.');
  const [name, label] = value.slice(0, i).split(':', 2) as [string, string | undefined];
  return [...acc, { name, label: label ?? name, example: value.slice(i + 1) }];
}

/** A JSON object read from a file (`--file flow.json`). */
export function jsonFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
  }
  try {
    return jsonObject(text);
  } catch {
    throw new InvalidArgumentError(`${path} does not hold a JSON object.`);
  }
}

export function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer.');
  return n;
}

export function num(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('expected a number.');
  return n;
}

export const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Drops undefined keys; `--data` (raw JSON) goes first so explicit flags win. */
export function body(data: Record<string, unknown> | undefined, fields: Record<string, unknown>): Record<string, unknown> {
  return { ...(data ?? {}), ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
}

export function by(o: { byId?: string; byName?: string }): { id: string; name: string } | undefined {
  if (o.byId === undefined && o.byName === undefined) return undefined;
  return { id: o.byId ?? '', name: o.byName ?? '' };
}

export const DATA = ['--data <json>', 'extra body fields as a JSON object (flags win)'] as const;
export const q = (params: Record<string, string | number | undefined>): string => {
  const s = new URLSearchParams(
    Object.entries(params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  return s ? `?${s}` : '';
};
