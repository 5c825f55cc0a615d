// The dependency rules of .dependency-cruiser.cjs (`npm run deps`, a CI stage) catch what they are written for:
// a probe tree with one violation of each rule is cruised with the real rule set, and exactly those violations
// come back, while the allowed arrows pass.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as IConfiguration;

const PROBE: Record<string, string> = {
  'src/json.ts': 'export const json = 1;\n',
  'src/chain/index.ts': 'export const chain = 2;\n',
  // Allowed: anyone (outside src/rego) → a leaf.
  'src/lifecycle/index.ts':
    "import { chain } from '../chain/index.ts';\nimport { json } from '../json.ts';\nexport const lifecycle = [chain, json];\n",
  // Leaves that lean on another leaf and on a layer above (a folder leaf and a file leaf).
  'src/chain/probe.ts':
    "import { json } from '../json.ts';\nimport { lifecycle } from '../lifecycle/index.ts';\nexport const leaf = [json, lifecycle];\n",
  // src/crypto builds on the leaves only: the store is above it.
  'src/crypto/probe.ts': "import { a } from '../store/a.ts';\nexport const crypto = a;\n",
  'src/recent-map.ts': "import { json } from './json.ts';\nexport const recent = json;\n",
  // Allowed: admin → lifecycle, server → admin and lifecycle, cli → server.
  'src/admin/index.ts': "import { lifecycle } from '../lifecycle/index.ts';\nexport const admin = lifecycle;\n",
  'src/server/app.ts':
    "import { admin } from '../admin/index.ts';\nimport { lifecycle } from '../lifecycle/index.ts';\nexport const app = [admin, lifecycle];\n",
  'src/cli/main.ts': "import { app } from '../server/app.ts';\nexport const main = app;\n",
  // One file breaking four rules: an upward arrow, the composition root, the CLI and a database driver.
  'src/lifecycle/probe.ts': [
    "import { admin } from '../admin/index.ts';",
    "import { app } from '../server/app.ts';",
    "import { main } from '../cli/main.ts';",
    "import pg from 'pg';",
    'export const probe = [admin, app, main, pg];',
    '',
  ].join('\n'),
  'src/rego/probe.ts': "import { json } from '../json.ts';\nexport const rego = json;\n",
  'src/acs/probe.ts': "import fc from 'fast-check';\nexport const acs = fc;\n",
  'src/store/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
  'src/store/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
};

let dir: string;
let result: ICruiseResult;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dependency-rules-'));
  for (const [file, text] of Object.entries(PROBE)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'probe',
      type: 'module',
      dependencies: { pg: '*' },
      devDependencies: { 'fast-check': '*' },
    }),
  );
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const { forbidden, allowed, allowedSeverity, options } = config;
    const reported = await cruise(['src'], {
      ...options,
      tsConfig: undefined,
      baseDir: dir,
      validate: true,
      ruleSet: { forbidden, allowed, allowedSeverity },
    });
    result = reported.output as ICruiseResult;
  } finally {
    process.chdir(cwd);
  }
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('.dependency-cruiser.cjs', () => {
  it('reports exactly the probe violations, each under its rule (a cycle once), and passes the allowed arrows', () => {
    const found = result.summary.violations
      .map((v) => `${v.rule.name}: ${v.from} -> ${v.to.replace(/^.*node_modules\/([^/]+)\/.*$/, 'npm:$1')}`)
      .sort();
    expect([...new Set(found)]).toEqual(
      [
        'cli-is-a-leaf: src/lifecycle/probe.ts -> src/cli/main.ts',
        'database-drivers-only-in-store: src/lifecycle/probe.ts -> npm:pg',
        'leaves-stay-leaves: src/chain/probe.ts -> src/json.ts',
        'leaves-stay-leaves: src/chain/probe.ts -> src/lifecycle/index.ts',
        'leaves-stay-leaves: src/recent-map.ts -> src/json.ts',
        'no-circular: src/store/a.ts -> src/store/b.ts',
        'not-in-allowed: src/chain/probe.ts -> src/lifecycle/index.ts',
        'not-in-allowed: src/crypto/probe.ts -> src/store/a.ts',
        'not-in-allowed: src/lifecycle/probe.ts -> src/admin/index.ts',
        'not-in-allowed: src/lifecycle/probe.ts -> src/cli/main.ts',
        'not-in-allowed: src/lifecycle/probe.ts -> src/server/app.ts',
        'not-in-allowed: src/rego/probe.ts -> src/json.ts',
        'rego-imports-only-rego: src/rego/probe.ts -> src/json.ts',
        'runtime-needs-only-dependencies: src/acs/probe.ts -> npm:fast-check',
        'server-is-the-root: src/lifecycle/probe.ts -> src/server/app.ts',
      ].sort(),
    );
  });
});
