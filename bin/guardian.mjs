#!/usr/bin/env node
// The `guardian` CLI: runs the compiled package (dist/, built by `npm run build`, `prepare` or `npm start`).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  console.error('guardian: dist/ is missing; run `npm run build` in the package directory');
  process.exit(70);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv);
