// The API reference page (/docs) in a real browser: Debian's chromium driven by playwright-core.
// Skipped where chromium is not installed (a fresh developer machine); .ci/run installs it.
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveBrowser, launchBrowser } from '../console.js';
import { startTestApp, type TestApp } from '../harness.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

describe.skipIf(!haveBrowser)('the API reference page /docs, in chromium', () => {
  let app: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it("loads the customer document: its top bar points at /api/v1/openapi.json, its version is the package's, and every operation is listed", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${app.url}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 15_000 });
    const topbar = await page.locator('.topbar').innerText();
    expect(topbar).toContain('/api/v1/openapi.json');
    expect(await page.locator('.info .version').first().innerText()).toContain(version);
    const doc = (await (await fetch(`${app.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
      webhooks: Record<string, unknown>;
    };
    const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    // The customer API and the automations' incoming webhook (its token is its key).
    expect(await page.locator('.opblock-summary-path[data-path^="/api/v1/"], .opblock-summary-path[data-path^="/hooks/"]').count()).toBe(
      operations,
    );
    // The webhook events are on the page too, one block per kind.
    expect(await page.locator('.opblock').count()).toBe(operations + Object.keys(doc.webhooks).length);
    // The operator API is not on the customers' page.
    expect(await page.getByText('/admin/v1').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});
