// `guardian policy eval 'QUERY' -d … -i …` in-process through main(): opa eval's JSON output (expressions with
// captured values, bindings, `{}` when undefined), data from any .json/.yaml below -d, -b bundles, --fail.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGuardian } from './run-guardian.ts';

const dir = mkdtempSync(join(tmpdir(), 'policy-eval-query-'));
mkdirSync(join(dir, 'pol', 'cfg'), { recursive: true });
writeFileSync(join(dir, 'pol', 'p.rego'), 'package x\n\nallow if input.n < data.cfg.limit\n\nxs := [1, 2, 3]\n');
writeFileSync(join(dir, 'pol', 'cfg', 'limits.yaml'), 'limit: 3\n');
writeFileSync(join(dir, 'in.json'), '{"n": 1}');
mkdirSync(join(dir, 'bundle', 'b'), { recursive: true });
writeFileSync(join(dir, 'bundle', '.manifest'), '{"roots": ["b"]}');
writeFileSync(join(dir, 'bundle', 'b', 'q.rego'), 'package b\n\nname := data.b.who\n');
writeFileSync(join(dir, 'bundle', 'b', 'data.json'), '{"who": "ada"}');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function evalQuery(args: string[]): Promise<{ code: number; out: unknown; stderr: string }> {
  const r = await runGuardian(['policy', 'eval', ...args]);
  return { code: r.code, out: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
}

const at = (row: number, col: number) => ({ row, col });

describe('guardian policy eval QUERY', { timeout: 300_000 }, () => {
  const d = ['-d', join(dir, 'pol')];

  it('a rule reference: its value as the one expression', async () => {
    const r = await evalQuery([...d, 'data.x.allow', '-i', join(dir, 'in.json')]);
    expect(r.code).toBe(0);
    expect(r.out).toEqual({ result: [{ expressions: [{ value: true, text: 'data.x.allow', location: at(1, 1) }] }] });
  });

  it('a single expression is captured even when false; undefined prints {}', async () => {
    expect((await evalQuery([...d, 'data.cfg.limit == 4'])).out).toEqual({
      result: [{ expressions: [{ value: false, text: 'data.cfg.limit == 4', location: at(1, 1) }] }],
    });
    expect((await evalQuery([...d, 'count(data.x.xs)'])).out).toEqual({
      result: [{ expressions: [{ value: 3, text: 'count(data.x.xs)', location: at(1, 1) }] }],
    });
    const undef = await evalQuery([...d, 'data.x.allow']);
    expect([undef.code, undef.out]).toEqual([0, {}]);
    const failed = await evalQuery([...d, 'data.x.allow', '--fail']);
    expect([failed.code, failed.out]).toEqual([1, {}]);
  });

  it('several expressions: every result has bindings, and a false expression filters it out', async () => {
    const r = await evalQuery([...d, 'x := data.x.xs[_]; x > 1']);
    const row = (x: number) => ({
      expressions: [
        { value: true, text: 'x := data.x.xs[_]', location: at(1, 1) },
        { value: true, text: 'x > 1', location: at(1, 20) },
      ],
      bindings: { x },
    });
    expect(r.out).toEqual({ result: [row(2), row(3)] });
  });

  it('with modifiers apply; -b loads a bundle directory next to -d', async () => {
    const r = await evalQuery([...d, 'data.x.allow with input as {"n": 0}']);
    expect(r.out).toEqual({
      result: [{ expressions: [{ value: true, text: 'data.x.allow with input as {"n": 0}', location: at(1, 1) }] }],
    });
    const b = await evalQuery(['-b', join(dir, 'bundle'), 'data.b.name']);
    expect(b.out).toEqual({ result: [{ expressions: [{ value: 'ada', text: 'data.b.name', location: at(1, 1) }] }] });
  });

  it('a query that does not parse: its error with location, exit 3', async () => {
    const r = await evalQuery([...d, 'x = ']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^query:1:5: rego_parse_error: /);
    expect(r.stderr).toMatch(/guardian: 1 error occurred\n$/);
  });
});
