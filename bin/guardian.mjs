#!/usr/bin/env node
// The `guardian` CLI. Sources are TypeScript run through tsx, so `npm install` is the whole build.
import { register } from 'tsx/esm/api';

// tsx's loader rewrites every ESM file it loads, and binaryen is one 15 MB file: through the loader its
// import takes 7–10 s instead of 0.5 s. Loading it natively first puts it in the module cache, so the
// compiler's own `import 'binaryen'` is free. Only the groups that may compile Rego pay even that.
const compiling = new Set(['policy', 'serve', 'replay', 'bundle']);
const group = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
if (compiling.has(group)) await import('binaryen');

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
