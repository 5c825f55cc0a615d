// The Rego toolchain in a browser: a page bundled with esbuild for the browser platform compiles a policy with
// src/rego/browser.ts and evaluates it with @open-policy-agent/opa-wasm in headless Chromium (served from this
// process on 127.0.0.1). Needs /usr/bin/chromium (Debian's `chromium` package); fails when it is missing.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRuntimeWasm } from '../../../src/rego/wasm/runtime.ts';
import { compilePolicyWasm } from '../../../src/rego/index.ts';
import { POLICY, POLICY_ENTRYPOINT, POLICY_FILE } from './policy.ts';

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
const PAGE_ENTRY = fileURLToPath(new URL('./page.ts', import.meta.url));
// The browser example of docs/rego-toolchain.md, served as written.
const EXAMPLE_HTML = fileURLToPath(new URL('../../../docs/examples/rego-toolchain-browser.html', import.meta.url));
const EXAMPLE_ENTRY = fileURLToPath(new URL('../../../docs/examples/rego-toolchain-browser.mjs', import.meta.url));
const BROWSER_ENTRY = fileURLToPath(new URL('../../../src/rego/browser.ts', import.meta.url));
const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

interface PageDecision {
  result: { allow: boolean; reason: string };
}

let server: Server | undefined;
let context: BrowserContext | undefined;
let userDataDir: string | undefined;
let page: Page;
let metafile: Metafile;
let origin: string;
const pageErrors: string[] = [];

it(`has Chromium at ${CHROMIUM}`, () => {
  expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true);
});

describe('the Rego toolchain in Chromium', () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: this test needs Chromium (apt-get install -y chromium)`);
    const bundle = await build({
      entryPoints: [PAGE_ENTRY],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      metafile: true,
      logLevel: 'silent',
      // binaryen.js reaches node:module only on Node (behind a process.versions.node check).
      external: ['node:module'],
    });
    metafile = bundle.metafile;
    const script = bundle.outputFiles[0].contents;
    const example = await build({
      entryPoints: [EXAMPLE_ENTRY],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      external: ['node:module'],
      // What a `browser` condition on the package's `./rego` export would resolve to.
      alias: { 'acs-guardian/rego': BROWSER_ENTRY },
    });
    const runtime = await loadRuntimeWasm();
    const html =
      '<!doctype html><html><head><meta charset="utf-8"><title>Rego in the browser</title></head>' +
      '<body data-state="loading"><pre id="decision"></pre><script type="module" src="/page.js"></script></body></html>';
    server = createServer((req, res) => {
      const routes: Record<string, [string, string | Uint8Array]> = {
        '/': ['text/html; charset=utf-8', html],
        '/page.js': ['text/javascript; charset=utf-8', script],
        '/runtime.wasm': ['application/wasm', runtime],
        '/example/': ['text/html; charset=utf-8', readFileSync(EXAMPLE_HTML, 'utf8')],
        '/example/rego-toolchain-browser.js': ['text/javascript; charset=utf-8', example.outputFiles[0].contents],
        '/example/runtime.wasm': ['application/wasm', runtime],
      };
      const route = routes[req.url ?? ''];
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': route[0] }).end(route[1]);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    userDataDir = mkdtempSync(join(tmpdir(), 'rego-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${origin}/`);
    await page.waitForSelector('body[data-state="ready"], body[data-state="failed"]', {
      state: 'attached',
      timeout: 120_000,
    });
    const state = await page.getAttribute('body', 'data-state');
    if (state !== 'ready') throw new Error(`page failed: ${await page.textContent('#decision')}`);
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('bundles for the browser with no Node built-in from our code', () => {
    const ours = Object.entries(metafile.inputs).filter(([path]) => path.includes('src/rego/'));
    expect(ours.some(([path]) => path.endsWith('src/rego/browser.ts'))).toBe(true);
    expect(ours.some(([path]) => path.endsWith('wasm/link.ts'))).toBe(true);
    const nodeImports = Object.entries(metafile.inputs).flatMap(([path, input]) =>
      input.imports.filter((i) => i.path.startsWith('node:')).map((i) => `${path} → ${i.path}`),
    );
    // The one left is binaryen.js's own, behind its Node check.
    expect(nodeImports).toEqual([expect.stringMatching(/binaryen\/index\.js → node:module$/)]);
    expect(Object.keys(metafile.inputs).some((p) => p.startsWith(SRC) && /src\/(policy|store|cli)\//.test(p))).toBe(
      false,
    );
  });

  it('compiles in the page to the same module Node compiles', async () => {
    const wasmBase64 = await page.evaluate(async () => (await globalThis.regoPage).wasmBase64);
    const { wasm } = await compilePolicyWasm({
      sources: [{ file: POLICY_FILE, text: POLICY }],
      entrypoints: [POLICY_ENTRYPOINT],
    });
    expect(wasmBase64.length).toBeGreaterThan(1000);
    expect(Buffer.from(wasmBase64, 'base64').equals(Buffer.from(wasm))).toBe(true);
  });

  it('evaluates with opa-wasm in the page: allow for a viewer reading docs', async () => {
    const input = { user: { name: 'ada', role: 'viewer' }, action: 'read:file', resource: 'docs.readme' };
    const resultSet = (await page.evaluate(
      async (i) => (await globalThis.regoPage).decide(i),
      input,
    )) as PageDecision[];
    expect(resultSet).toEqual([{ result: { allow: true, reason: 'ada (viewer) may read:file on docs.readme' } }]);
    expect(await page.textContent('#decision')).toBe(JSON.stringify(resultSet));
  });

  it('a second input gets a different decision: deny for a viewer writing', async () => {
    const input = { user: { name: 'bob', role: 'viewer' }, action: 'write:file', resource: 'docs.readme' };
    const resultSet = (await page.evaluate(
      async (i) => (await globalThis.regoPage).decide(i),
      input,
    )) as PageDecision[];
    expect(resultSet).toEqual([{ result: { allow: false, reason: 'bob (viewer) may not write:file on docs.readme' } }]);
    const other = { user: { name: 'eve', role: 'viewer' }, action: 'read:file', resource: 'src.main' };
    const glob = (await page.evaluate(async (i) => (await globalThis.regoPage).decide(i), other)) as PageDecision[];
    expect(glob[0].result.allow).toBe(false);
  });

  it('reports compile errors in the page with file:row:col', async () => {
    const diagnostics = await page.evaluate(async () =>
      (await globalThis.regoPage).diagnostics('package bad\n\nx if { y }\n'),
    );
    expect(diagnostics).toMatch(/^bad\.rego:3:\d+: rego_unsafe_var_error: var y is unsafe/);
    expect(pageErrors).toEqual([]);
  });

  it("runs the doc's browser example: two inputs, two decisions, then a compile error", async () => {
    const example = await context!.newPage();
    const errors: string[] = [];
    example.on('pageerror', (err) => errors.push(err.message));
    await example.goto(`${origin}/example/`);
    await example.waitForSelector('body[data-state="ready"]', { state: 'attached', timeout: 120_000 });
    const decide = async (input: string): Promise<string> => {
      await example.fill('#input', input);
      await example.$eval('#result', (el) => {
        el.textContent = '';
      });
      await example.click('#evaluate');
      await example.waitForSelector('#result:not(:empty)', { state: 'attached', timeout: 120_000 });
      return (await example.textContent('#result')) ?? '';
    };
    expect(await decide('{"role": "viewer", "action": "read:report"}')).toBe('[{"result":true}]');
    expect(await decide('{"role": "viewer", "action": "write:report"}')).toBe('[{"result":false}]');
    await example.fill('#policy', 'package authz\n\nallow if { x }\n');
    expect(await decide('{}')).toMatch(/^authz\.rego:3:\d+: rego_unsafe_var_error: var x is unsafe$/);
    expect(errors).toEqual([]);
    await example.close();
  });
});
