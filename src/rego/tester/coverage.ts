// `guardian policy test --coverage`: which lines of each module the tests reached, reported as
// `opa test --coverage --format json` reports it (files → covered/not_covered line ranges, coverage %).
// A compiled Wasm module has no trace events, so the modules are instrumented before compiling: a
// `trace("<probe>")` expression (a host call that returns true) is put before every expression of a rule body
// (its line is covered when evaluation reaches it, as OPA's Eval event marks it) and at the end of the body
// (the head's line is covered when the body succeeded, as OPA's Exit event marks it). Default rules are not
// counted (OPA evaluates them only when no other definition holds).
import type { Body, Expr, Module, Rule } from '../ast/types.ts';

const PROBE_PREFIX = '\u0000coverage:';

export interface LineRange {
  start: { row: number };
  end: { row: number };
}

export interface FileCoverage {
  covered?: LineRange[];
  not_covered?: LineRange[];
  covered_lines: number;
  not_covered_lines: number;
  coverage: number;
}

/** OPA's coverage report shape (`opa test --coverage --format json`). */
export interface CoverageReport {
  files: Record<string, FileCoverage>;
  covered_lines: number;
  not_covered_lines: number;
  coverage: number;
}

/** Instrumented modules' probes: which (file, row) each one stands for, and the rows that were reached. */
export class CoverageProbes {
  private readonly probes: { file: string; row: number }[] = [];
  private readonly hit = new Set<number>();

  /** The probe id for a line (one per file and row). */
  probe(file: string, row: number): string {
    let id = this.probes.findIndex((p) => p.file === file && p.row === row);
    if (id < 0) id = this.probes.push({ file, row }) - 1;
    return `${PROBE_PREFIX}${id}`;
  }

  /** A print/trace line: true when it was a probe (and is recorded), false for the policy's own output. */
  record(line: string): boolean {
    if (!line.startsWith(PROBE_PREFIX)) return false;
    this.hit.add(Number(line.slice(PROBE_PREFIX.length)));
    return true;
  }

  report(): CoverageReport {
    const byFile = new Map<string, { covered: Set<number>; all: Set<number> }>();
    this.probes.forEach((p, id) => {
      const f = byFile.get(p.file) ?? { covered: new Set<number>(), all: new Set<number>() };
      byFile.set(p.file, f);
      f.all.add(p.row);
      if (this.hit.has(id)) f.covered.add(p.row);
    });
    const files: Record<string, FileCoverage> = {};
    let covered = 0;
    let total = 0;
    for (const file of [...byFile.keys()].sort()) {
      const f = byFile.get(file)!;
      const rows = [...f.all].sort((a, b) => a - b);
      const yes = rows.filter((r) => f.covered.has(r));
      const no = rows.filter((r) => !f.covered.has(r));
      files[file] = {
        ...(yes.length ? { covered: ranges(yes) } : {}),
        ...(no.length ? { not_covered: ranges(no) } : {}),
        covered_lines: yes.length,
        not_covered_lines: no.length,
        coverage: percent(yes.length, rows.length),
      };
      covered += yes.length;
      total += rows.length;
    }
    return { files, covered_lines: covered, not_covered_lines: total - covered, coverage: percent(covered, total) };
  }
}

function percent(n: number, total: number): number {
  return total === 0 ? 0 : Math.round((n / total) * 10000) / 100;
}

/** Consecutive rows as OPA's ranges. */
function ranges(rows: number[]): LineRange[] {
  const out: LineRange[] = [];
  for (const r of rows) {
    const last = out[out.length - 1];
    if (last && last.end.row === r - 1) last.end.row = r;
    else out.push({ start: { row: r }, end: { row: r } });
  }
  return out;
}

function probeExpr(id: string, row: number, file: string): Expr {
  const location = { file, row, col: 1 };
  return {
    index: 0,
    negated: false,
    with: [],
    generated: true,
    terms: {
      type: 'call',
      operator: { type: 'ref', value: [{ type: 'var', value: 'trace', location }], location },
      args: [{ type: 'string', value: id, location }],
    },
    location,
  };
}

function instrumentBody(body: Body, headRow: number | undefined, file: string, probes: CoverageProbes): Body {
  const out: Body = [];
  for (const e of body) {
    const row = e.location?.row;
    if (!e.generated && row !== undefined) out.push(probeExpr(probes.probe(file, row), row, file));
    out.push(e);
  }
  if (headRow !== undefined) out.push(probeExpr(probes.probe(file, headRow), headRow, file));
  return out.map((e, index) => ({ ...e, index }));
}

function instrumentRule(rule: Rule, file: string, probes: CoverageProbes): void {
  if (rule.default) return;
  rule.body = instrumentBody(rule.body, rule.location?.row ?? rule.head.location?.row, file, probes);
  if (rule.else) instrumentRule(rule.else, file, probes);
}

/** Puts coverage probes into every rule body of `modules` (in place). */
export function instrumentForCoverage(modules: Module[], probes: CoverageProbes): void {
  for (const m of modules) for (const r of m.rules) instrumentRule(r, m.file, probes);
}

const rowSpan = (r: { start: { row: number }; end: { row: number } }): string =>
  r.start.row === r.end.row ? `${r.start.row}` : `${r.start.row}-${r.end.row}`;

/**
 * `opa test --threshold`'s error when the total coverage is below `threshold` (percent), else undefined: OPA's
 * CoverageThresholdError text, with the lines not covered listed per file when `verbose`.
 */
export function coverageThresholdError(
  report: CoverageReport,
  threshold: number,
  verbose: boolean,
): string | undefined {
  if (threshold <= 0 || report.coverage >= threshold) return undefined;
  let text = `Code coverage threshold not met: got ${report.coverage.toFixed(2)} instead of ${threshold.toFixed(2)}`;
  const files = Object.keys(report.files).sort();
  if (verbose && files.length) {
    text += '\nLines not covered:';
    for (const file of files) for (const r of report.files[file].not_covered ?? []) text += `\n\t${file}:${rowSpan(r)}`;
  }
  return text;
}

/** The text report: per file `covered/total lines (N%)`, then the total. */
export function formatCoverageReport(report: CoverageReport): string {
  const lines = Object.entries(report.files).map(
    ([file, f]) =>
      `${file}: ${f.covered_lines}/${f.covered_lines + f.not_covered_lines} lines (${f.coverage}%)` +
      (f.not_covered?.length ? `; not covered: ${f.not_covered.map(rowSpan).join(', ')}` : ''),
  );
  lines.push(
    `total: ${report.covered_lines}/${report.covered_lines + report.not_covered_lines} lines (${report.coverage}%)`,
  );
  return lines.join('\n');
}
