// A real server process (src/cli/main.ts serve) for the tests that kill one with SIGKILL.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ADMIN_TOKEN, TEST_SECRETS_KEYS } from './harness.js';

/**
 * The environment of a test server process: the tests' operator token, a free port on loopback,
 * no demo account, no automatic sandbox statuses, no logs; `own` adds to it or overrides it.
 */
export const serverEnv = (own: Record<string, string>): Record<string, string> => ({
  ADMIN_TOKEN,
  SECRETS_KEYS: TEST_SECRETS_KEYS,
  PORT: '0',
  HOST: '127.0.0.1',
  SEED_DEMO: 'off',
  SANDBOX_AUTO_STATUS: 'off',
  LOG_LEVEL: 'silent',
  ...own,
});

/**
 * Starts `chasqui serve` with `env` and resolves with its URL once it listens. `cleanup` gets a
 * function that kills it (if still alive) and waits for its exit, for the file's afterAll.
 */
export function spawnServer(
  env: Record<string, string>,
  cleanup: (fn: () => Promise<void>) => void,
  startTimeoutMs = 90_000,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: join(import.meta.dirname, '..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((res) => child.once('exit', res));
  cleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out} ${err}`)), startTimeoutMs);
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: m[1].replace('localhost', '127.0.0.1') });
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}
