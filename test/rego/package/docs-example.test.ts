// docs/rego-toolchain.md cannot drift from the code: every block marked `<!-- example: FILE -->` is that file
// verbatim, and the Node example runs and prints exactly the block marked `<!-- output: FILE -->`.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOC = readFileSync(join(ROOT, 'docs', 'rego-toolchain.md'), 'utf8');
const NODE_EXAMPLE = 'docs/examples/rego-toolchain-node.mjs';

/** The fenced blocks that follow `<!-- KIND: FILE -->` markers. */
function markedBlocks(kind: 'example' | 'output'): Map<string, string> {
  const blocks = new Map<string, string>();
  const re = new RegExp(`<!-- ${kind}: (\\S+) -->\\n\`\`\`[a-z]*\\n([\\s\\S]*?)\\n\`\`\`\\n`, 'g');
  for (const m of DOC.matchAll(re)) blocks.set(m[1], m[2]);
  return blocks;
}

describe('docs/rego-toolchain.md', () => {
  it('shows each example file as it is', () => {
    const examples = markedBlocks('example');
    expect([...examples.keys()].sort()).toEqual([
      'docs/examples/rego-toolchain-browser.html',
      'docs/examples/rego-toolchain-browser.mjs',
      NODE_EXAMPLE,
    ]);
    for (const [file, block] of examples) expect(block, file).toBe(readFileSync(join(ROOT, file), 'utf8').trimEnd());
  });

  it('the Node example prints what the doc says', async () => {
    const expected = markedBlocks('output').get(NODE_EXAMPLE);
    expect(expected).toBeDefined();
    // The example imports the package by name; run it against this checkout's sources whatever the exports map
    // points at (built files or sources).
    const code = readFileSync(join(ROOT, NODE_EXAMPLE), 'utf8');
    expect(code).toContain(`from 'acs-guardian/rego'`);
    const dir = mkdtempSync(join(tmpdir(), 'rego-doc-'));
    try {
      const file = join(dir, 'example.mjs');
      const index = pathToFileURL(join(ROOT, 'src', 'rego', 'index.ts')).href;
      writeFileSync(file, code.replace(`from 'acs-guardian/rego'`, `from ${JSON.stringify(index)}`));
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
        cwd: ROOT,
        timeout: 120_000,
      });
      expect(stderr).toBe('');
      expect(stdout).toBe(`${expected}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
