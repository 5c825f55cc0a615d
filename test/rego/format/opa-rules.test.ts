// `guardian policy fmt` lays modules out as `opa fmt` does. Each case in cases/ is our own small module
// (`NAME.rego`, or `NAME.rego.v0` for the `--rego-v1` rewrite) and the output OPA's formatter gives for it
// (`NAME.rego.formatted`), one layout rule per case (see the header of src/rego/format/index.ts). Every
// output also formats to itself and means what the input meant.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseModule } from '../../../src/rego/ast/index.ts';
import type { Module } from '../../../src/rego/ast/types.ts';
import { formatSource } from '../../../src/rego/format/index.ts';

const DIR = fileURLToPath(new URL('./cases/', import.meta.url));

/** The rules, without what formatting may change: locations, comments, `=`/`:=` in heads, generated bodies. */
function rules(m: Module): string {
  return JSON.stringify(m.rules, (k, v) =>
    k === 'location' || k === 'assign' || k === 'generated' || k === 'index'
      ? undefined
      : k === 'value' && typeof v === 'string' && /^\$\d+$/.test(v)
        ? '_'
        : v,
  );
}

const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.rego') || f.endsWith('.rego.v0'))
  .sort()
  .map((f) => ({ name: f.replace(/\.rego(\.v0)?$/, ''), file: join(DIR, f), v0: f.endsWith('.v0') }));

describe('opa fmt layout rules', () => {
  it('has the cases', () => expect(cases.length).toBeGreaterThanOrEqual(16));

  it.each(cases.map((c) => [c.name, c]))('%s', (_name, c) => {
    const text = readFileSync(c.file, 'utf8');
    const expected = readFileSync(join(DIR, `${c.name}.rego.formatted`), 'utf8');
    const out = formatSource(c.file, text, { regoV1: c.v0 });
    expect(out).toBe(expected);
    expect(formatSource(c.file, out)).toBe(out);
    expect(rules(parseModule(c.file, out))).toBe(rules(parseModule(c.file, text, { regoVersion: c.v0 ? 0 : 1 })));
  });
});
