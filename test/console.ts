// The console in a browser for the page tests: Debian's chromium through playwright-core, and a
// member logged in through the login page (console.md "Pages": found by role and accessible name).
import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { TestApp } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
export const haveBrowser = existsSync(CHROMIUM);
export const SHOTS = '/tmp/console-shots';

export function launchBrowser(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    // This machine's network is closed: no background connections, no first-run work.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A page at this width that collects script errors and CSP violations (not a 4xx's console line). */
export async function openPage(browser: Browser, width = 1280): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  return { page, errors };
}

/** Adds a member of this role with a password (operator API); returns how to log in. */
export async function addMemberFor(app: TestApp, accountId: string, role: 'owner' | 'admin' | 'agent', name = 'Ana Equipo') {
  const m = {
    email: `${role}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}@example.com`,
    name,
    role,
    password: 'una clave larga del equipo',
  };
  const res = await app.admin('POST', `/accounts/${accountId}/members`, m);
  if (res.status !== 201) throw new Error(`add member: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.member.id as string, ...m };
}

/** Logs in through the login page and waits for the inbox. */
export async function loginAs(page: Page, appUrl: string, m: { email: string; password: string }): Promise<void> {
  await page.goto(`${appUrl}/console/login`);
  await page.getByLabel('Email', { exact: true }).fill(m.email);
  await page.getByLabel('Contraseña', { exact: true }).fill(m.password);
  await page.getByRole('button', { name: 'Ingresar' }).click();
  await page.waitForURL(`${appUrl}/console/conversaciones`);
  await page.getByRole('navigation', { name: 'Secciones' }).waitFor();
}
