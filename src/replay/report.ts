// Replay reports: a terminal table, JSON, Markdown and a self-contained HTML page. Every value that came
// from the store (ids, methods, reason codes, reasoning) is attacker-influenced: Markdown cells are escaped,
// HTML is fully entity-escaped and the page carries no script and a CSP that forbids loading anything.
import type { ReplayReport, ReplayStep, ReplaySummary } from './types.ts';

export type ReportFormat = 'table' | 'json' | 'md' | 'html';
export const REPORT_FORMATS: readonly ReportFormat[] = ['table', 'json', 'md', 'html'];

export function renderReport(report: ReplayReport, format: ReportFormat): string {
  switch (format) {
    case 'json':
      return JSON.stringify(report, null, 2) + '\n';
    case 'md':
      return renderMarkdown(report);
    case 'html':
      return renderHtml(report);
    case 'table':
      return renderTable(report);
  }
}

function list(xs: string[]): string {
  return xs.length ? xs.join(', ') : '-';
}

function stepChange(step: ReplayStep): string {
  if (step.status === 'tampered') return `TAMPERED (${step.tamper ?? 'hash mismatch'})`;
  if (step.status !== 'compared') return step.status + (step.detail ? `: ${step.detail}` : '');
  const d = step.delta;
  if (!d) return '';
  const parts: string[] = [];
  if (d.rulesAdded.length) parts.push(`+rules ${d.rulesAdded.join(' ')}`);
  if (d.rulesRemoved.length) parts.push(`-rules ${d.rulesRemoved.join(' ')}`);
  if (d.reasonCodesAdded.length) parts.push(`+codes ${d.reasonCodesAdded.join(' ')}`);
  if (d.reasonCodesRemoved.length) parts.push(`-codes ${d.reasonCodesRemoved.join(' ')}`);
  if (d.detailsChanged) parts.push('details changed');
  if (step.nondeterministic) parts.push('NON-DETERMINISTIC');
  return parts.join('; ') || 'unchanged';
}

function decisionCell(step: ReplayStep, which: 'recorded' | 'replayed'): string {
  const v = step[which];
  return v ? v.decision : '-';
}

interface Row {
  cells: string[];
}

function summaryRows(s: ReplaySummary): [string, string][] {
  const rows: [string, string][] = [
    ['against', s.against],
    ['revisions', list(s.revisions)],
    [
      'selection',
      Object.entries(s.selection)
        .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`)
        .join(' ') || 'everything',
    ],
    ['sessions', `${s.sessions} replayed, ${s.sessionsSkipped} skipped`],
    ['entries', `${s.entriesScanned} scanned, ${s.entriesEvaluated} evaluated, ${s.selected} selected`],
    ['compared', `${s.compared} (${s.unchanged} unchanged, ${s.changed} changed)`],
    ['tampered', String(s.tampered)],
  ];
  if (s.unrecorded) rows.push(['unrecorded', String(s.unrecorded)]);
  if (s.policyUnavailable) rows.push(['policy unavailable', String(s.policyUnavailable)]);
  if (s.unroutable) rows.push(['unroutable', String(s.unroutable)]);
  rows.push([s.determinismCheck ? 'non-determinism' : 'non-deterministic steps', String(s.nondeterministic)]);
  rows.push(['duration', `${s.durationMs} ms (${s.entriesPerSecond} entries/s)`]);
  return rows;
}

function transitionRows(s: ReplaySummary): [string, string][] {
  return Object.entries(s.transitions)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, n]) => [k, String(n)]);
}

function deltaRows(table: Record<string, { added: number; removed: number }>): [string, string, string][] {
  return Object.entries(table)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => [k, String(v.added), String(v.removed)]);
}

function stepRows(report: ReplayReport): Row[] {
  return report.steps.map((st) => ({
    cells: [
      st.sessionId,
      String(st.seq),
      st.method,
      st.timestamp ?? '-',
      decisionCell(st, 'recorded'),
      decisionCell(st, 'replayed'),
      stepChange(st),
    ],
  }));
}

const STEP_HEADERS = ['session', 'seq', 'method', 'timestamp', 'recorded', 'replayed', 'change'];

/** Terminal text: no control characters from the store reach the terminal. */
function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

function textTable(headers: string[], rows: string[][]): string {
  // The last column (the change) is never cut: it is what the reader is looking for.
  const widths = headers.map((h, i) =>
    Math.min(i === headers.length - 1 ? Infinity : 60, Math.max(h.length, ...rows.map((r) => plain(r[i]).length))),
  );
  const fmt = (cells: string[]): string =>
    cells
      .map((c, i) => {
        const t = plain(c);
        return (t.length > widths[i] ? t.slice(0, widths[i] - 1) + '…' : t).padEnd(widths[i]);
      })
      .join('  ')
      .trimEnd();
  return [fmt(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt)].join('\n') + '\n';
}

export function renderTable(report: ReplayReport): string {
  const s = report.summary;
  let out = textTable(['replay', ''], summaryRows(s));
  const transitions = transitionRows(s);
  if (transitions.length) out += '\n' + textTable(['transition', 'steps'], transitions);
  const codes = deltaRows(s.reasonCodes);
  if (codes.length) out += '\n' + textTable(['reason code', 'added', 'removed'], codes);
  const rules = deltaRows(s.rules);
  if (rules.length) out += '\n' + textTable(['rule', 'added', 'removed'], rules);
  if (report.steps.length)
    out +=
      '\n' +
      textTable(
        STEP_HEADERS,
        stepRows(report).map((r) => r.cells),
      );
  if (report.stepsOmitted) out += `\n… ${report.stepsOmitted} more steps not listed\n`;
  return out;
}

/** A Markdown table cell: pipes, backslashes, HTML and Markdown emphasis characters escaped; one line. */
export function escapeMarkdownCell(text: string): string {
  return plain(text)
    .replace(/[\\`*_{}[\]()#+!|~>]/g, (c) => '\\' + c)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;');
}

function mdTable(headers: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.map(escapeMarkdownCell).join(' | ')} |`;
  return [line(headers), `|${headers.map(() => ' --- ').join('|')}|`, ...rows.map(line)].join('\n') + '\n';
}

export function renderMarkdown(report: ReplayReport): string {
  const s = report.summary;
  let out = `# Replay report\n\n${mdTable(['', 'value'], summaryRows(s))}`;
  const transitions = transitionRows(s);
  if (transitions.length) out += `\n## Transitions\n\n${mdTable(['recorded → replayed', 'steps'], transitions)}`;
  const codes = deltaRows(s.reasonCodes);
  if (codes.length) out += `\n## Reason codes\n\n${mdTable(['reason code', 'added', 'removed'], codes)}`;
  const rules = deltaRows(s.rules);
  if (rules.length) out += `\n## Rules\n\n${mdTable(['rule', 'added', 'removed'], rules)}`;
  if (report.steps.length)
    out += `\n## Steps\n\n${mdTable(
      STEP_HEADERS,
      stepRows(report).map((r) => r.cells),
    )}`;
  if (report.stepsOmitted) out += `\n${report.stepsOmitted} more steps not listed.\n`;
  return out;
}

/** HTML text and attribute escaping (the five significant characters). */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function htmlTable(headers: string[], rows: string[][], rowClass?: (i: number) => string): string {
  const head = `<tr>${headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr>`;
  const body = rows
    .map(
      (r, i) =>
        `<tr${rowClass ? ` class="${escapeHtml(rowClass(i))}"` : ''}>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`,
    )
    .join('\n');
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>\n`;
}

export function renderHtml(report: ReplayReport): string {
  const s = report.summary;
  const sections: string[] = [`<h1>Replay report</h1>`, htmlTable(['', 'value'], summaryRows(s))];
  const transitions = transitionRows(s);
  if (transitions.length)
    sections.push('<h2>Transitions</h2>', htmlTable(['recorded → replayed', 'steps'], transitions));
  const codes = deltaRows(s.reasonCodes);
  if (codes.length) sections.push('<h2>Reason codes</h2>', htmlTable(['reason code', 'added', 'removed'], codes));
  const rules = deltaRows(s.rules);
  if (rules.length) sections.push('<h2>Rules</h2>', htmlTable(['rule', 'added', 'removed'], rules));
  if (report.steps.length) {
    const cls = (i: number): string => {
      const st = report.steps[i];
      return st.status === 'tampered'
        ? 'tampered'
        : st.nondeterministic
          ? 'nondeterministic'
          : st.delta?.transition
            ? 'transition'
            : 'changed';
    };
    sections.push(
      '<h2>Steps</h2>',
      htmlTable(
        STEP_HEADERS,
        stepRows(report).map((r) => r.cells),
        cls,
      ),
    );
  }
  if (report.stepsOmitted) sections.push(`<p>${report.stepsOmitted} more steps not listed.</p>`);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Replay report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;font-family:ui-monospace,monospace;font-size:13px}
th{background:#f3f3f3}
tr.transition td{background:#fff4e0}
tr.tampered td{background:#fde2e2}
tr.nondeterministic td{background:#fde2e2;font-weight:bold}
</style>
</head>
<body>
${sections.join('\n')}
</body>
</html>
`;
}
