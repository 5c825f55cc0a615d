// A unified line diff (`guardian policy fmt --diff`), from a longest-common-subsequence table: module
// sources are small enough that the quadratic table is cheap, and no diff package is needed.

type Op = { kind: ' ' | '-' | '+'; line: string; a: number; b: number };

function lineOps(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: length of the LCS of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ kind: ' ', line: a[i++], a: i, b: ++j });
    else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) ops.push({ kind: '-', line: a[i++], a: i, b: j });
    else ops.push({ kind: '+', line: b[j++], a: i, b: j });
  }
  return ops;
}

/** `--- a/<file>` / `+++ b/<file>` and `@@` hunks with `context` lines around each change; '' when equal. */
export function unifiedDiff(file: string, before: string, after: string, context = 3): string {
  if (before === after) return '';
  const split = (s: string): string[] => (s.endsWith('\n') ? s.slice(0, -1) : s).split('\n');
  const ops = lineOps(split(before), split(after));
  const changed = ops.map((o, k) => (o.kind !== ' ' ? k : -1)).filter((k) => k >= 0);
  const name = file.replace(/^\/+/, '');
  const out = [`--- a/${name}`, `+++ b/${name}`];
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k] - context);
    let end = Math.min(ops.length, changed[k] + context + 1);
    while (k + 1 < changed.length && changed[k + 1] - context <= end) {
      k++;
      end = Math.min(ops.length, changed[k] + context + 1);
    }
    const hunk = ops.slice(start, end);
    const aStart = hunk.find((o) => o.kind !== '+');
    const bStart = hunk.find((o) => o.kind !== '-');
    const aLen = hunk.filter((o) => o.kind !== '+').length;
    const bLen = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${aStart ? aStart.a : 0},${aLen} +${bStart ? bStart.b : 0},${bLen} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k++;
  }
  return `${out.join('\n')}\n`;
}
