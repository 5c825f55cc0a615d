// The operator console in a real browser (Debian's Chromium driven by playwright-core) against a real Guardian:
// signed traffic from the SDK client, the bundle lifecycle on PGlite, the admin API v1. A viewer sees sessions,
// a session's chain and its verification, live decisions, the registry and the audit log, without the operator
// buttons; an operator activates a bundle (after confirming) and reads a replay's diff. Screenshots of each page
// go to test-results/console/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp } from '../../src/console/index.ts';
import { constantBundle } from '../lifecycle/fixtures.ts';
import { type AdminGuardian, startAdminGuardian } from '../admin/fixtures.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SHOTS = new URL('../../test-results/console/', import.meta.url).pathname;
const VIEWER = 'viewer-console-token-0123456789';
const OPERATOR = 'operator-console-token-0123456789';
const env = {
  GUARDIAN_ADMIN_TOKENS: JSON.stringify({
    tokens: [
      { name: 'vera', role: 'viewer', token: VIEWER },
      { name: 'otto', role: 'operator', token: OPERATOR },
    ],
  }),
};

let g: AdminGuardian;
let origin: string;
let context: BrowserContext;
let userDataDir: string;
const pageErrors: string[] = [];
const traffic = (agentId: string, steps: number) => g.traffic(agentId, steps);

async function signIn(token: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(`${origin}/console`);
  await page.getByLabel('Admin token').fill(token);
  await page.keyboard.press('Enter');
  await page.getByText(/^Signed in as /).waitFor();
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  g = await startAdminGuardian({ env, admin: { feedPollMs: 100 }, console: true });
  await g.node.push(
    await constantBundle('rev-b', {
      decision: { decision: 'deny', reasoning: 'rev-b denies', reason_codes: ['blocked'] },
    }),
    { source: 'test', activate: false, by: 'test' },
  );
  origin = g.origin;
  userDataDir = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
}, 180_000);
afterAll(async () => {
  await context?.close();
  await g?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

describe('operator console', () => {
  it('is off without an admin token, and served with a strict CSP otherwise', async () => {
    const off = createConsoleApp({ env: {} });
    expect((await off.request('/')).status).toBe(404);
    const res = await fetch(`${origin}/console`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${origin}/console/assets/app.js`)).headers.get('content-type')).toMatch(/javascript/);
  });

  it('a viewer sees sessions of real traffic, a session chain and its verification, live decisions — no operator buttons', async () => {
    const sessionId = await traffic('agent-console', 3);
    const page = await signIn(VIEWER);
    await expect(page.getByText('Signed in as vera (viewer)').isVisible()).resolves.toBe(true);
    const link = page.getByRole('link', { name: sessionId });
    await link.waitFor();
    await shot(page, 'sessions');
    await link.click();
    await page.getByText('rev-a allows').first().waitFor();
    expect(await page.locator('.step').count()).toBe(3);
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await page.locator('#verify-result .ok').waitFor();
    expect(await page.locator('#verify-result').textContent()).toContain('Chain intact: 3 entries');
    await shot(page, 'session');

    await page.getByRole('link', { name: 'Dashboard' }).click();
    await page.locator('#dashboard-facts').waitFor();
    expect(await page.locator('#dashboard-facts').textContent()).toMatch(
      /Decisions \(last hour\)\d+.*Active bundlerev-a.*ok/,
    );
    await page.locator('.chart canvas').waitFor();
    await page.getByRole('cell', { name: 'fixture_allow' }).waitFor();
    await shot(page, 'dashboard');

    await page.getByRole('link', { name: 'Live' }).click();
    await page.getByText('Receiving decisions as they are made.').waitFor();
    const live = await traffic('agent-live-console', 1);
    await page.getByRole('link', { name: live.slice(0, 8) }).waitFor({ timeout: 20_000 });
    await shot(page, 'live');

    await page.getByRole('link', { name: 'Decisions' }).click();
    await page.getByLabel('Agent').fill('agent-console');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('.decision-row').count(), { timeout: 10_000 }).toBe(3);
    await shot(page, 'decisions');

    await page.getByRole('link', { name: 'Bundles' }).click();
    await page.getByRole('cell', { name: 'rev-b' }).waitFor();
    expect(await page.getByRole('button', { name: /Activate/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Roll back' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Upload' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await page.getByRole('button', { name: 'Start replay' }).count()).toBe(0);
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('works from the keyboard alone: sign in, move through the navigation, open a page', async () => {
    const page = await context.newPage();
    await page.goto(`${origin}/console`);
    // The token field has focus once the page has rendered (typing before that would go nowhere).
    await expect
      .poll(() => page.evaluate('document.activeElement ? document.activeElement.tagName : null'), { timeout: 10_000 })
      .toBe('INPUT');
    await page.keyboard.type(VIEWER);
    await page.keyboard.press('Enter');
    await page.getByText(/^Signed in as /).waitFor();
    const focused = () => page.evaluate('document.activeElement ? document.activeElement.textContent : null');
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await focused()) === 'Audit log';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Admin audit log' }).waitFor();
    await page.close();
  });

  it('an operator activates a bundle after confirming, replays against another revision and reads the diff', async () => {
    const page = await signIn(OPERATOR);
    await page.getByRole('link', { name: 'Bundles' }).click();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    await page.getByRole('button', { name: 'Activate rev-b' }).click();
    await page.getByText('Active revision is now rev-b.').waitFor();
    expect(dialogs).toEqual(['Activate rev-b on every replica?']);
    // The banner and the active-revision line re-render separately: wait for the second too.
    await expect.poll(() => page.locator('#active-revision').textContent(), { timeout: 10_000 }).toContain('rev-b');
    expect(g.node.engine.revision).toBe('rev-b');
    await page.getByLabel('Bundle file (.tar.gz)').setInputFiles({
      name: 'rev-c.tar.gz',
      mimeType: 'application/gzip',
      buffer: Buffer.from(await constantBundle('rev-c')),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Registered rev-c (not active: activate or replay against it).').waitFor();
    await page.getByRole('cell', { name: 'rev-c', exact: true }).waitFor();
    expect(g.node.engine.revision).toBe('rev-b');
    await shot(page, 'bundles');

    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByLabel('Against revision').selectOption('rev-b');
    await page.getByLabel('Agent').fill('agent-console');
    await page.getByRole('button', { name: 'Start replay' }).click();
    await page.locator('#replay-summary').waitFor({ timeout: 30_000 });
    expect(await page.locator('#replay-summary').textContent()).toContain('3 steps replayed: 3 changed');
    await page.getByText('allow→deny').waitFor();
    await shot(page, 'replay');

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'activateBundle' }).waitFor();
    expect(await page.locator('tr.audit-ok').first().textContent()).toContain('otto');
    await shot(page, 'audit');
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
