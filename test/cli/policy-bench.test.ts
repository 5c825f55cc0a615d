// `guardian policy bench` in-process through main(): rounds of timed evaluations of a real compiled module,
// from -d sources and from a built bundle; run-count and duration budgets; the JSON report.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseBenchtime, type BenchRound } from '../../src/cli/commands/policy-bench.ts';
import { runGuardian } from './run-guardian.ts';

const dir = mkdtempSync(join(tmpdir(), 'policy-bench-'));
mkdirSync(join(dir, 'pol', 'cfg'), { recursive: true });
writeFileSync(join(dir, 'pol', 'p.rego'), 'package x\n\nallow if input.n < data.cfg.limit\n');
writeFileSync(join(dir, 'pol', 'cfg', 'limits.yaml'), 'limit: 3\n');
writeFileSync(join(dir, 'in.json'), '{"n": 1}');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (args: string[]) => runGuardian(['policy', ...args]);

describe('guardian policy bench', { timeout: 300_000 }, () => {
  it('a fixed run count per round, JSON report, progress on stderr', async () => {
    const args = ['bench', '-d', join(dir, 'pol'), '-e', 'x/allow', '-i', join(dir, 'in.json')];
    const r = await run([...args, '--benchtime', '50x', '--count', '2', '--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const rounds = JSON.parse(r.stdout) as BenchRound[];
    expect(rounds).toHaveLength(2);
    for (const round of rounds) {
      expect(round).toMatchObject({ entrypoint: 'x/allow', runs: 50 });
      expect(round.ns_per_op).toBeGreaterThan(0);
      expect(round.ns_per_op).toBeCloseTo(round.total_ns / 50, 6);
      // Evaluating allocates on the Wasm heap (the result set, at least).
      expect(round.heap_bytes_per_op).toBeGreaterThan(0);
    }
    expect(r.stderr).toContain('round 2/2: 50 runs in ');
  });

  it('a duration budget from a built bundle, as a table', async () => {
    const out = join(dir, 'b.tar.gz');
    expect((await run(['build', join(dir, 'pol'), '-e', 'x/allow', '-o', out, '-q'])).code).toBe(0);
    const r = await run(['bench', '-b', out, '-e', 'x/allow', '--benchtime', '100ms', '-q']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const samples = Number(/\| samples\s+\|\s+(\d+) \|/.exec(r.stdout)?.[1]);
    expect(samples).toBeGreaterThan(1);
    expect(r.stdout).toMatch(/\| ns\/op\s+\|\s+\d+ \|/);
  });

  it('parses Go -benchtime values', () => {
    expect(parseBenchtime('100x')).toEqual({ kind: 'runs', n: 100 });
    expect(parseBenchtime('1.5s')).toEqual({ kind: 'time', ns: 1_500_000_000n });
    expect(parseBenchtime('250ms')).toEqual({ kind: 'time', ns: 250_000_000n });
    expect(() => parseBenchtime('0x')).toThrow(/--benchtime/);
    expect(() => parseBenchtime('soon')).toThrow(/--benchtime/);
  });
});
