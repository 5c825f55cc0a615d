// The operator console in a real browser (Debian's Chromium driven by playwright-core) against a real Guardian:
// signed traffic from the SDK client, the bundle lifecycle on PGlite, the admin API v1. A viewer sees sessions,
// a session's chain and its verification, a session's AgBOM, live decisions, the registry, the shadow report and
// the audit log, without the operator buttons; an operator activates a bundle (after confirming), shadows one
// and reads its report, and replays against a registry revision and against an uploaded bundle, reading each
// diff. Every page is checked for horizontal overflow at 1280 px; screenshots of each go to test-results/console/.
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

/** A full-page screenshot, after checking that the page fits the 1280 px viewport without a horizontal scrollbar. */
async function shot(page: Page, name: string): Promise<void> {
  const widths = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as number[];
  expect(widths[0], `${name} is wider than the viewport`).toBeLessThanOrEqual(widths[1]);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

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
    const inventory = await g.inventoryTraffic('agent-inventory-console');
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
    // No AgBOM section for a session without one.
    expect(await page.locator('#agbom').count()).toBe(0);
    await shot(page, 'session');

    await page.getByRole('link', { name: '← Sessions' }).click();
    await page.getByRole('link', { name: inventory }).click();
    const components = page.locator('#agbom-components tbody tr');
    await expect
      .poll(() => components.allTextContents(), { timeout: 10_000 })
      .toContainEqual(expect.stringContaining('db-mcp'));
    expect((await components.allTextContents()).some((t) => t.includes('user-notes'))).toBe(false);
    expect(await page.locator('#agbom-versions tbody tr').count()).toBe(3);
    await page.getByLabel('At entry').selectOption({ index: 1 });
    await expect
      .poll(() => components.allTextContents(), { timeout: 10_000 })
      .toContainEqual(expect.stringContaining('user-notes'));
    expect((await components.allTextContents()).some((t) => t.includes('db-mcp'))).toBe(false);
    await shot(page, 'session-agbom');
    await page.getByLabel('Format').selectOption('cyclonedx-1.6');
    await expect
      .poll(() => page.getByLabel('AgBOM as cyclonedx-1.6').textContent(), { timeout: 10_000 })
      .toContain('"bomFormat": "CycloneDX"');

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
    expect(await page.getByRole('button', { name: /^Shadow / }).count()).toBe(0);
    await page.locator('#shadow-report').getByText('No shadow candidate.').waitFor();
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await page.getByRole('button', { name: 'Start replay' }).count()).toBe(0);
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('works from the keyboard alone: sign in, move through the navigation, open a session, verify its chain', async () => {
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

    // Back to Sessions (Shift+Tab), open the newest session and verify its chain, all from the keyboard.
    const sessionId = await traffic('agent-keyboard', 2);
    const tabUntil = async (key: string, wanted: (text: string | null) => boolean, max = 40) => {
      for (let i = 0; i < max; i++) {
        await page.keyboard.press(key);
        if (wanted((await focused()) as string | null)) return true;
      }
      return false;
    };
    expect(await tabUntil('Shift+Tab', (t) => t === 'Sessions')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: sessionId }).waitFor();
    expect(await tabUntil('Tab', (t) => t === sessionId)).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Session ${sessionId}` }).waitFor();
    expect(await tabUntil('Tab', (t) => t === 'Verify chain')).toBe(true);
    await page.keyboard.press('Space');
    await page.locator('#verify-result .ok').waitFor();
    expect(await page.locator('#verify-result').textContent()).toContain('Chain intact: 2 entries');
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

    // Shadow rev-c (allow) beside the enforcing rev-b (deny): two steps, two differences in the report.
    await page.getByRole('button', { name: 'Shadow rev-c' }).click();
    await page.getByText('Shadowing rev-c: it is evaluated beside the active bundle, not enforced.').waitFor();
    await expect.poll(() => page.locator('#shadow-summary').textContent(), { timeout: 10_000 }).toContain('rev-c');
    await traffic('agent-shadow-console', 2);
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh report' }).click();
          return page.locator('#shadow-summary').textContent();
        },
        { timeout: 20_000 },
      )
      .toContain('2 decisions differ');
    expect(await page.getByRole('table', { name: 'Differences by method' }).textContent()).toMatch(
      /steps\/userMessage\s*deny\s*allow\s*2/,
    );
    expect(await page.locator('.shadow-sample').count()).toBe(2);
    expect(g.node.engine.revision).toBe('rev-b');
    await shot(page, 'bundles');
    await page.getByRole('button', { name: 'Stop shadow' }).click();
    await page
      .locator('#shadow-report')
      .getByText(/^No shadow candidate\./)
      .waitFor();

    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByLabel('Against revision').selectOption('rev-b');
    await page.getByLabel('Agent').fill('agent-console');
    await page.getByRole('button', { name: 'Start replay' }).click();
    await page.locator('#replay-summary').waitFor({ timeout: 30_000 });
    expect(await page.locator('#replay-summary').textContent()).toContain('3 steps replayed: 3 changed');
    await page.getByText('allow→deny').waitFor();
    expect(await page.locator('#replay-steps tbody tr').count()).toBe(3);

    // Against a bundle uploaded on this page: registered (not activated), then replayed against.
    await page.getByLabel('or a bundle file (.tar.gz)').setInputFiles({
      name: 'rev-d.tar.gz',
      mimeType: 'application/gzip',
      buffer: Buffer.from(
        await constantBundle('rev-d', {
          decision: {
            decision: 'deny',
            reasoning: 'rev-d denies',
            reason_codes: ['rev_d_blocks'],
            policy_references: [{ policy_id: 'fixture', rule_id: 'rules.block_all' }],
          },
        }),
      ),
    });
    await page.getByRole('button', { name: 'Start replay' }).click();
    await page.getByText('Registered rev-d (not active); replaying against it.').waitFor();
    await page.getByRole('heading', { name: /^Replay against [0-9a-f]{64}$/ }).waitFor();
    await expect
      .poll(() => page.locator('#replay-summary').textContent(), { timeout: 30_000 })
      .toContain('3 steps replayed: 3 changed');
    await page.getByRole('cell', { name: 'rev_d_blocks', exact: true }).waitFor();
    await page.getByRole('cell', { name: 'rules.block_all', exact: true }).waitFor();
    expect(await page.locator('#replay-steps').textContent()).toContain('+rev_d_blocks −fixture_allow');
    expect(g.node.engine.revision).toBe('rev-b');
    // The jobs list follows: both jobs done.
    await expect.poll(() => page.getByRole('button', { name: /: done \(/ }).count(), { timeout: 10_000 }).toBe(2);
    await shot(page, 'replay');

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'activateBundle' }).waitFor();
    expect(await page.locator('tr.audit-ok').first().textContent()).toContain('otto');
    await shot(page, 'audit');
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
