#!/usr/bin/env node
// The `guardian` CLI. Sources are TypeScript run through tsx, so `npm install` is the whole build.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
