// Where the keyring comes from (docs/operating.md "The secrets key"): SECRETS_KEYS, else the key
// made on the first start in DATA_DIR/secrets-key (mode 0600, like the admin token) — never in
// production, which refuses to start without SECRETS_KEYS.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { secretTexts } from '../http/messages.es-AR.js';
import { Keyring, parseKeyring } from './keyring.js';

export interface LoadedKeyring {
  keyring: Keyring;
  /** The key was made now, in this file (log it once: it must be kept with the data directory). */
  generatedFile: string | null;
}

function fromText(text: string, where: string): Keyring {
  const r = parseKeyring(text);
  if ('problem' in r) throw new Error(`${where}: ${r.problem}`);
  return new Keyring(r.keys);
}

export function loadKeyring(config: Pick<Config, 'SECRETS_KEYS' | 'NODE_ENV' | 'DATA_DIR'>): LoadedKeyring {
  if (config.SECRETS_KEYS) return { keyring: new Keyring(config.SECRETS_KEYS), generatedFile: null };
  const file = `${config.DATA_DIR}/secrets-key`;
  // In production the key comes from SECRETS_KEYS only; a data directory that was run outside
  // production already has its values sealed by the file's key: say to use that one, not a new one.
  if (config.NODE_ENV === 'production')
    throw new Error(existsSync(file) ? secretTexts.requiredInProductionWithFile(file) : secretTexts.requiredInProduction);
  const made = `local:${randomBytes(32).toString('base64')}`;
  mkdirSync(config.DATA_DIR, { recursive: true });
  try {
    // 'wx': of two processes starting on one data directory, one makes the key and both use it.
    writeFileSync(file, `${made}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { keyring: fromText(readFileSync(file, 'utf8').trim(), file), generatedFile: null };
  }
  return { keyring: fromText(made, file), generatedFile: file };
}
