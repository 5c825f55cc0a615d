// The Prometheus text exposition format as a scraper reads it: every line a HELP/TYPE comment or a sample, each
// sample keyed `name{labels}` with its labels sorted, so tests look metrics up by exact series. A value may be NaN
// in any case, as Prometheus reads it (prom-client writes `Nan` for an event-loop lag not yet sampled).
import { expect } from 'vitest';

/** Prometheus text format → samples keyed `name{labels}` (labels sorted); HELP/TYPE lines checked for form. */
export function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      expect(line).toMatch(/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$/);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\+Inf|-Inf)(?: \d+)?$/.exec(line);
    expect(m, line).not.toBeNull();
    const labels = [...(m![2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, k, v]) => `${k}="${v}"`)
      .sort()
      .join(',');
    samples.set(labels ? `${m![1]}{${labels}}` : m![1], Number(m![3]));
  }
  return samples;
}
