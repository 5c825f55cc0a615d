// The operator console (docs/console.md), served at /console: one HTML page and the Preact bundle that
// scripts/build.mjs builds with esbuild into dist/console/assets/ (nothing from a CDN). The page talks only to
// the admin API v1 with the token the user signs in with, so the API's roles are the console's roles. Off (404)
// unless an admin token is configured.
import { existsSync, readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { TokenTable } from '../admin/auth/index.ts';

/** Where the bundle is: beside the compiled module (dist/console/assets), or dist/ when running from src/. */
function assetsDirectory(): URL | null {
  for (const candidate of ['./assets/', '../../dist/console/assets/']) {
    const url = new URL(candidate, import.meta.url);
    if (existsSync(new URL('app.js', url))) return url;
  }
  return null;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Guardian console</title>
<link rel="stylesheet" href="/console/assets/app.css">
</head>
<body>
<div id="app"><noscript>The console needs JavaScript.</noscript></div>
<script type="module" src="/console/assets/app.js"></script>
</body>
</html>
`;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const TYPES: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export interface ConsoleAppOptions {
  env?: Readonly<Record<string, string | undefined>>;
}

export function createConsoleApp(options: ConsoleAppOptions = {}): Hono {
  const app = new Hono();
  const enabled = new TokenTable({ env: options.env ?? process.env }).enabled;
  const assets = enabled ? assetsDirectory() : null;
  if (!enabled || !assets) {
    const why = enabled
      ? 'the console bundle is not built (npm run build)'
      : 'console disabled (set GUARDIAN_ADMIN_TOKEN)';
    app.all('*', (c) => c.json({ error: why }, 404));
    return app;
  }
  const files = new Map(Object.keys(TYPES).map((name) => [name, readFileSync(new URL(name, assets))]));
  app.get('/', (c) => c.body(PAGE, 200, { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS }));
  app.get('/assets/:file', (c) => {
    const name = c.req.param('file');
    const body = files.get(name);
    if (!body) return c.json({ error: 'not found' }, 404);
    return c.body(new Uint8Array(body), 200, { 'content-type': TYPES[name], ...SECURITY_HEADERS });
  });
  app.all('*', (c) => c.json({ error: 'not found' }, 404));
  return app;
}
