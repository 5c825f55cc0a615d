// The output formats of `guardian policy eval QUERY -f …`, as `opa eval --format` writes them (OPA's
// presentation package): json (the whole result), values (each result's expression values), bindings (each
// result's bindings), raw (strings as they are, other values as compact JSON, for scripts) and pretty (a value, or a
// table of bindings). Numbers stay as the module wrote them (exact-result.ts).
import { stringify } from 'lossless-json';
import { type ExactJson, printExact } from './exact-result.ts';

export const EVAL_FORMATS = ['json', 'values', 'bindings', 'raw', 'pretty'] as const;
export type EvalFormat = (typeof EVAL_FORMATS)[number];

export interface EvalExpression {
  value: ExactJson;
  text: string;
  location: { row: number; col: number };
}

export interface EvalResult {
  expressions: EvalExpression[];
  bindings?: Record<string, ExactJson>;
}

/** opa eval's --pretty-limit default: longer table cells are cut and end in `...`. */
const PRETTY_LIMIT = 80;

const compact = (v: ExactJson): string => stringify(v) ?? 'null';

/** The text `opa eval -f <format>` prints for a result set (`[]`: undefined). */
export function formatEvalOutput(format: EvalFormat, results: EvalResult[]): string {
  switch (format) {
    case 'json':
      return printExact(results.length ? { result: results } : {});
    case 'values':
      return results.map((r) => printExact(r.expressions.map((e) => e.value))).join('');
    case 'bindings':
      return results.map((r) => printExact(r.bindings ?? {})).join('');
    case 'raw':
      return results
        .map(
          (r) => `${r.expressions.map((e) => (typeof e.value === 'string' ? e.value : compact(e.value))).join(' ')}\n`,
        )
        .join('');
    case 'pretty':
      return prettyOutput(results);
  }
}

function prettyOutput(results: EvalResult[]): string {
  if (results.length === 0) return 'undefined\n';
  const first = results[0];
  const bound = Object.keys(first.bindings ?? {});
  // One result without bindings: its (first) value, as JSON, when it has one expression or only booleans.
  if (
    results.length === 1 &&
    bound.length === 0 &&
    (first.expressions.length === 1 || first.expressions.every((e) => typeof e.value === 'boolean'))
  )
    return printExact(first.expressions[0].value);
  // Otherwise a table: the bound variables by name, then the expressions that are not booleans (all of them when
  // nothing is bound), one row per result.
  const columns: { header: string; cell: (r: EvalResult) => ExactJson }[] = [
    ...[...bound].sort().map((name) => ({ header: name, cell: (r: EvalResult) => r.bindings?.[name] })),
    ...first.expressions.flatMap((e, i) =>
      typeof e.value !== 'boolean' || bound.length === 0
        ? [{ header: e.text, cell: (r: EvalResult) => r.expressions[i]?.value }]
        : [],
    ),
  ];
  const rows = results.map((r) =>
    columns.map((c) => {
      const text = compact(c.cell(r));
      return text.length > PRETTY_LIMIT ? `${text.slice(0, PRETTY_LIMIT)}...` : text;
    }),
  );
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((row) => row[i].length)));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
  const centered = (s: string, w: number): string => {
    const gap = w - s.length;
    const left = Math.floor(gap / 2);
    return ' '.repeat(left) + s + ' '.repeat(gap - left);
  };
  const line = (cells: string[], pad: (s: string, w: number) => string): string =>
    `|${cells.map((s, i) => ` ${pad(s, widths[i])} `).join('|')}|\n`;
  return (
    rule +
    line(
      columns.map((c) => c.header),
      centered,
    ) +
    rule +
    rows.map((row) => line(row, (s, w) => s.padEnd(w))).join('') +
    rule
  );
}
