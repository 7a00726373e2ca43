// The console in a real browser for the page tests (test/e2e/console-*.test.ts): Debian's
// chromium through playwright-core (skipped where it is not installed), and logging a member in
// through the login page.
import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
export const haveBrowser = existsSync(CHROMIUM);
/** Where the page tests write their screenshots (look at them). */
export const SHOTS = '/tmp/console-shots';

export async function launchBrowser(): Promise<Browser> {
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

/** Logs in through /console/login and waits for the first page of the shell. */
export async function loginAs(page: Page, appUrl: string, m: { email: string; password: string }): Promise<void> {
  await page.goto(`${appUrl}/console/login`);
  await page.getByLabel('Email', { exact: true }).fill(m.email);
  await page.getByLabel('Contraseña', { exact: true }).fill(m.password);
  await page.getByRole('button', { name: 'Ingresar' }).click();
  await page.waitForURL(`${appUrl}/console/conversaciones`);
  await page.getByRole('navigation', { name: 'Secciones' }).waitFor();
}
