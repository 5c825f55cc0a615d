// `guardian replay` through the real CLI entry (main), on a PGlite data directory recorded by the real Guardian.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { openStore } from '../../src/store/index.ts';
import { recordConstantHistory } from './fixtures.ts';

let dir: string;
let sessions: string[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'replay-cli-'));
  const store = await openStore({ dataDir: join(dir, 'data') });
  try {
    ({ sessions } = await recordConstantHistory(store));
  } finally {
    await store.close();
  }
}, 180_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function guardian(...args: string[]): Promise<number> {
  const saved = process.exitCode;
  try {
    return await main(['node', 'guardian', 'replay', '--data-dir', join(dir, 'data'), '--no-progress', ...args]);
  } finally {
    process.exitCode = saved;
  }
}

describe('guardian replay', () => {
  it('--against a registry revision, JSON to --out: the transitions; exit 0, or 1 with --fail-on-diff', async () => {
    const out = join(dir, 'report.json');
    expect(await guardian('--against', 'deny-all', '--format', 'json', '--out', out)).toBe(0);
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      summary: { compared: number; transitions: Record<string, number>; rules: Record<string, unknown> };
    };
    expect(report.summary.compared).toBe(6);
    expect(report.summary.transitions).toEqual({ 'allow→deny': 6 });
    expect(
      await guardian('--against', 'deny-all', '--fail-on-diff', '--format', 'md', '--out', join(dir, 'r.md')),
    ).toBe(1);
    expect(readFileSync(join(dir, 'r.md'), 'utf8')).toContain('# Replay report');
  }, 120_000);

  it('--against recorded --fail-on-diff: every decision reproduced, exit 0', async () => {
    const out = join(dir, 'det.json');
    expect(await guardian('--against', 'recorded', '--fail-on-diff', '--format', 'json', '--out', out)).toBe(0);
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      summary: { compared: number; changed: number; determinismCheck: boolean };
    };
    expect(report.summary).toMatchObject({ compared: 6, changed: 0, determinismCheck: true });
  }, 120_000);

  it('selection flags narrow the steps (session, method, decision, decided-by)', async () => {
    const out = join(dir, 'sel.json');
    expect(
      await guardian(
        '--against',
        'deny-all',
        '--session',
        sessions[1],
        '--method',
        'steps/toolCallRequest',
        '--decision',
        'allow',
        '--decided-by',
        'allow-all',
        '--format',
        'json',
        '--out',
        out,
      ),
    ).toBe(0);
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      summary: { sessions: number; compared: number };
      steps: { sessionId: string }[];
    };
    expect(report.summary).toMatchObject({ sessions: 1, compared: 2 });
    expect(report.steps.every((s) => s.sessionId === sessions[1])).toBe(true);
  }, 120_000);

  it('--workers 2 replays in worker threads with the same report as --workers 0 (in-process)', async () => {
    const summaries = [];
    for (const workers of ['0', '2']) {
      const out = join(dir, `w${workers}.json`);
      expect(await guardian('--against', 'deny-all', '--workers', workers, '--format', 'json', '--out', out)).toBe(0);
      const { summary, steps } = JSON.parse(readFileSync(out, 'utf8')) as {
        summary: Record<string, unknown>;
        steps: unknown[];
      };
      expect(summary.workers).toBe(Number(workers));
      // Everything but timing and the worker count must be the same.
      const {
        workers: _w,
        evaluationMs: _e,
        durationMs: _d,
        entriesPerSecond: _r,
        startedAt: _s,
        finishedAt: _f,
        ...rest
      } = summary;
      summaries.push({ rest, steps });
    }
    expect(summaries[1]).toEqual(summaries[0]);
  }, 120_000);

  it('bad usage, unknown revisions and broken policies end with precise exit codes', async () => {
    expect(await guardian('--against', 'deny-all', '--workers', 'many')).toBe(2);
    expect(await guardian('--against', 'deny-all', '--format', 'pdf')).toBe(2);
    expect(await guardian('--against', 'deny-all', '--since', 'last tuesday')).toBe(2);
    expect(await guardian('--against', 'deny-all', '--decision', 'perhaps')).toBe(2);
    expect(await guardian('--against', 'v404')).toBe(1);
    writeFileSync(join(dir, 'broken.tar.gz'), 'nope');
    expect(await guardian('--against', join(dir, 'broken.tar.gz'))).toBe(2);
    const rego = join(dir, 'bad-rego');
    mkdirSync(rego);
    writeFileSync(join(rego, 'p.rego'), 'package acs\n\ndecision := {"decision": }\n');
    expect(await guardian('--against', rego)).toBe(3);
  }, 120_000);
});
