// A progress bar on stderr for long replays: entries done / total, rate, ETA. Silent for the first second (short
// runs print nothing); on a TTY it redraws one line, otherwise it prints a line every 10 s (CI logs).
import type { ReplayProgress } from './types.ts';

export interface ProgressSink {
  write(text: string): unknown;
  isTTY?: boolean;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** One progress line: `[#####.....]  52% 5200/10000 entries  1830/s  ETA 3s  (2 changed)`. */
export function formatProgress(p: ReplayProgress, width = 24): string {
  const rate = `${Math.round(p.ratePerSecond)}/s`;
  const changed = `${p.changed} changed`;
  if (p.total === null || p.total === 0) return `${p.processed} entries  ${rate}  ${changed}`;
  const frac = Math.min(1, p.processed / p.total);
  const filled = Math.round(frac * width);
  const eta = p.etaMs === null ? '?' : duration(p.etaMs);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(frac * 100)).padStart(3)}% ${p.processed}/${p.total} entries  ${rate}  ETA ${eta}  ${changed}`;
}

/** Returns an onProgress callback and a `done()` that ends the line. */
export function progressBar(
  sink: ProgressSink,
  options: { quietMs?: number; plainEveryMs?: number; now?: () => number } = {},
): { onProgress: (p: ReplayProgress) => void; done: () => void } {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const quietMs = options.quietMs ?? 1000;
  const plainEveryMs = options.plainEveryMs ?? 10_000;
  let last = -Infinity;
  let drawn = false;
  return {
    onProgress(p) {
      const t = now();
      if (t - started < quietMs) return;
      if (sink.isTTY) {
        if (t - last < 100) return;
        last = t;
        drawn = true;
        sink.write(`\r\u001b[2K${formatProgress(p)}`);
      } else if (t - last >= plainEveryMs) {
        last = t;
        sink.write(`replay: ${formatProgress(p)}\n`);
      }
    },
    done() {
      if (drawn) sink.write('\n');
      drawn = false;
    },
  };
}
