// Per-evaluation state: one clock reading per evaluation, replayable seeds, print sink.
import { describe, expect, it } from 'vitest';
import { HostBuiltinContext, type EvaluationInfo } from '../../../src/rego/builtins/index.ts';
import { builtins } from './call.ts';

describe('time.now_ns', () => {
  it('is constant within an evaluation and pinned by beginEvaluation (replay)', () => {
    const ctx = new HostBuiltinContext();
    const call = builtins(ctx);
    ctx.beginEvaluation({ now: 1_517_832_000_000_000_123n });
    expect(call('time.now_ns')).toBe(1_517_832_000_000_000_123n);
    expect(call('time.now_ns')).toBe(1_517_832_000_000_000_123n);
    ctx.beginEvaluation({ now: new Date('2020-01-01T00:00:00Z') });
    expect(call('time.now_ns')).toBe(1_577_836_800_000_000_000n);
    ctx.beginEvaluation({ now: 5 });
    expect(call('time.now_ns')).toBe(5);
  });

  it('without beginEvaluation: one reading per synchronous job, a fresh one afterwards', async () => {
    let ticks = 0n;
    const ctx = new HostBuiltinContext({ clock: () => 1_000_000_000_000_000_000n + ++ticks });
    const call = builtins(ctx);
    const first = call('time.now_ns');
    expect(call('time.now_ns')).toBe(first);
    await Promise.resolve();
    await new Promise((r) => setTimeout(r, 0));
    const second = call('time.now_ns');
    expect(second).not.toBe(first);
    expect(second as bigint).toBeGreaterThan(first as bigint);
  });

  it('the default clock is the wall clock with sub-millisecond resolution', () => {
    const call = builtins(new HostBuiltinContext());
    const ns = call('time.now_ns') as bigint;
    const ms = Number(ns / 1_000_000n);
    expect(Math.abs(ms - Date.now())).toBeLessThan(5_000);
  });
});

describe('uuid.rfc4122 and rand.intn are replayable', () => {
  it('same seed and key → same UUID (v4 format); another key or seed → another UUID', () => {
    const ctx = new HostBuiltinContext();
    const call = builtins(ctx);
    ctx.beginEvaluation({ seed: 'eval-1' });
    const a = call('uuid.rfc4122', 'k') as string;
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(call('uuid.rfc4122', 'k')).toBe(a);
    const b = call('uuid.rfc4122', 'other');
    expect(b).not.toBe(a);
    ctx.beginEvaluation({ seed: 'eval-2' });
    expect(call('uuid.rfc4122', 'k')).not.toBe(a);
    ctx.beginEvaluation({ seed: 'eval-1' });
    expect(call('uuid.rfc4122', 'k')).toBe(a);
    expect(call('uuid.parse', a)).toEqual({ variant: 'RFC4122', version: 4 });
  });

  it('without a seed every evaluation gets a random one', () => {
    const ctx = new HostBuiltinContext();
    const call = builtins(ctx);
    ctx.beginEvaluation();
    const a = call('uuid.rfc4122', 'k');
    ctx.beginEvaluation();
    expect(call('uuid.rfc4122', 'k')).not.toBe(a);
  });

  it('rand.intn stays in [0, |n|) and repeats under the same seed', () => {
    const ctx = new HostBuiltinContext();
    const call = builtins(ctx);
    ctx.beginEvaluation({ seed: 's' });
    const seen = new Set<unknown>();
    for (let i = 0; i < 200; i++) {
      const v = call('rand.intn', `k${i}`, 10) as number;
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(10);
      seen.add(v);
    }
    expect(seen.size).toBe(10);
    const first = call('rand.intn', 'x', -1000);
    ctx.beginEvaluation({ seed: 's' });
    expect(call('rand.intn', 'x', -1000)).toBe(first);
  });
});

describe('print and trace', () => {
  it('go to the sink with the request id; strings raw, other values in Rego syntax', () => {
    const lines: [string, EvaluationInfo][] = [];
    const ctx = new HostBuiltinContext({ print: (line, ev) => lines.push([line, ev]) });
    const call = builtins(ctx);
    ctx.beginEvaluation({ requestId: 'req-42' });
    call('internal.print', [['hello'], [{ b: [1, 'x'], a: null }], []]);
    call('internal.print', [['x'], [1, 2]]);
    call('print', 'p', 1.5, true);
    expect(call('trace', 'tracing')).toBe(true);
    expect(lines.map(([l]) => l)).toEqual([
      'hello {"a": null, "b": [1, "x"]} <undefined>',
      // One line per combination of operand values (OPA's cross product).
      'x 1',
      'x 2',
      'p 1.5 true',
      'tracing',
    ]);
    expect(lines.every(([, ev]) => ev.requestId === 'req-42')).toBe(true);
  });
});
