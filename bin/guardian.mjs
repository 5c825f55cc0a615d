#!/usr/bin/env node
// The `guardian` CLI. Sources are TypeScript run through tsx, so `npm install` is the whole build.
import { existsSync } from 'node:fs';
import { register } from 'tsx/esm/api';

// tsx's loader rewrites every ESM file it loads, and binaryen is one 15 MB file: through the loader its
// import takes 10–25 s instead of 1 s. Loading it natively first puts it in the module cache, so the
// compiler's own `import 'binaryen'` is free. Only the groups that may compile Rego pay even that.
// `serve` compiles only when its bundle file is missing: a server that never compiles should not carry
// binaryen's ≈ 240 MB of heap, which every full collection would mark for the server's whole life.
const compiling = new Set(['policy', 'serve', 'replay', 'bundle']);
const args = process.argv.slice(2);
const group = args.find((arg) => !arg.startsWith('-'));
const bundleFlag = args.findIndex((arg) => arg === '--bundle' || arg.startsWith('--bundle='));
const bundleFile =
  bundleFlag < 0
    ? 'bundles/acs.tar.gz'
    : args[bundleFlag].includes('=')
      ? args[bundleFlag].slice('--bundle='.length)
      : args[bundleFlag + 1];
const servesPrebuilt = group === 'serve' && typeof bundleFile === 'string' && existsSync(bundleFile);
if (compiling.has(group) && !servesPrebuilt) await import('binaryen');

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
