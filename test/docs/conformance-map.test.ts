// docs/conformance.md maps every requirement of every declared profile to a test (`file › name`): each file it
// cites must exist under test/ or rego/, and each name it cites must be in that file (a test or describe title,
// or a stretch of one: names shortened with `…` match their parts in order). A test renamed or removed without
// its mapping fails here, so the document cannot claim a test that is not there.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACS_PROFILES } from '../acs/fixtures/profiles.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOC = join(ROOT, 'docs/conformance.md');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (/(\.test\.ts|-suite\.ts|_test\.rego)$/.test(e.name)) out.push(relative(ROOT, p));
  }
  return out;
}
const TEST_FILES = [...filesUnder(join(ROOT, 'test')), ...filesUnder(join(ROOT, 'rego'))];

/** The one test file a citation (a basename or a path tail) names, or an explanation why none. */
function resolve(cited: string): string | { error: string } {
  const tail = cited.replace(/^test\//, '');
  const found = TEST_FILES.filter((f) => f === cited || f.endsWith(`/${tail}`));
  if (found.length === 1) return found[0];
  return { error: found.length === 0 ? `no test file ${cited}` : `${cited} is ambiguous: ${found.join(', ')}` };
}

/** Section-wide defaults the document states ("Tests in X unless named"), and its short names. */
const ALIASES: Record<string, string> = { ids: 'acs/provenance-ids.test.ts' };
const SECTION_DEFAULTS: [RegExp, string][] = [
  [/^### acs-provenance/, 'acs/provenance.test.ts'],
  [/^## ACS-Trace/, 'telemetry/telemetry.test.ts'],
];

interface Citation {
  line: number;
  file: string;
  name: string;
}

/** Every `file › name` citation of the last cell of each table row. */
function citations(doc: string): Citation[] {
  const out: Citation[] = [];
  let sectionDefault: string | null = null;
  const lines = doc.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('#')) {
      sectionDefault = SECTION_DEFAULTS.find(([re]) => re.test(line))?.[1] ?? null;
      continue;
    }
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    const cells = line.split(/(?<!\\)\|/).slice(1, -1);
    const cell = cells.at(-1) ?? '';
    if (/^\s*(Test|test)\b/.test(cell)) continue; // the header row
    let file: string | null = sectionDefault;
    // Tokens in order: a file (`x.test.ts`, `x_test.rego`, `x-suite.ts`, `ids`; backticked or not) followed by
    // `›` sets the file the following backticked names belong to; a backticked name after a `›` (or in a section
    // with a default file) is a test name.
    const token = /`?((?:[\w.-]+\/)*[\w.-]+(?:\.test\.ts|_test\.rego|-suite\.ts)|\bids\b)`?\s*›|`([^`]+)`|›/g;
    let afterArrow = sectionDefault !== null;
    for (const m of cell.matchAll(token)) {
      if (m[1]) {
        file = ALIASES[m[1]] ?? m[1];
        afterArrow = true;
      } else if (m[2] !== undefined) {
        if (afterArrow && file) out.push({ line: i + 1, file, name: m[2] });
      } else afterArrow = true;
    }
  }
  return out;
}

/** The titles of a file's tests and describes (`it`, `it.each`, `describe`, `describe.each`, `test`), as regexes. */
function titlesOf(source: string): RegExp[] {
  const out: RegExp[] = [];
  const title =
    /\b(?:it|describe|test)(?:\.each\((?:[^()]|\([^()]*\))*\))?\(\s*(?:'((?:\\.|[^'\\])*)'|"((?:\\.|[^"\\])*)"|`((?:\\.|[^`\\])*)`)/g;
  for (const m of source.matchAll(title)) {
    const text = (m[1] ?? m[2] ?? m[3]).replace(/\\(.)/g, '$1');
    // Template placeholders and vitest's %s / %i / %d formats stand for any text.
    const pattern = text
      .split(/\$\{[^}]*\}|%[sidfjo]/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*?');
    out.push(new RegExp(pattern));
  }
  // Rego tests are rules named test_*.
  for (const m of source.matchAll(/^(test_\w+)/gm)) out.push(new RegExp(`^${m[1]}$`));
  return out;
}

/**
 * Whether a cited name names a test of the file: each of its parts (split at `›` for describe › test and at `…`
 * for a shortened title) is contained in one of the file's titles, in the cited order of titles.
 */
function citedIn(titles: RegExp[], texts: string[], name: string, source = ''): boolean {
  // The ACS-Core vectors are tests titled `<vector id>: <verdict>`, one per id the file lists.
  const vector = /^(v[0-9a-f]{16})\b/.exec(name);
  if (vector) return source.includes(`'${vector[1]}'`);
  const parts = name
    .split(/[›…]/)
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  if (parts.length === 0) return false;
  // A part matches a title when the title's text contains it, or the title (a template) matches the part.
  return parts.every((part) => texts.some((t) => t.includes(part)) || titles.some((re) => re.test(part)));
}

describe('docs/conformance.md requirement → test mapping', () => {
  const doc = readFileSync(DOC, 'utf8');
  const cited = citations(doc);

  it('cites tests for every profile section', () => {
    const lines = doc.split('\n');
    for (const heading of [
      '### acs-inspect',
      '### acs-inspect-dynamic',
      '### acs-audit',
      '### acs-provenance',
      '## ACS-Trace',
    ]) {
      const start = lines.findIndex((l) => l === heading || l.startsWith(`${heading} `));
      expect(start, heading).toBeGreaterThanOrEqual(0);
      let end = lines.findIndex((l, i) => i > start && /^#{2,3} /.test(l));
      if (end < 0) end = lines.length;
      expect(cited.filter((c) => c.line > start + 1 && c.line <= end).length, heading).toBeGreaterThan(0);
    }
    expect(cited.length).toBeGreaterThan(100);
  });

  it('every cited file exists and every cited test name is in it', () => {
    const problems: string[] = [];
    const sources = new Map<string, { titles: RegExp[]; texts: string[]; source: string }>();
    for (const c of cited) {
      const file = resolve(c.file);
      if (typeof file !== 'string') {
        problems.push(`docs/conformance.md:${c.line}: ${file.error}`);
        continue;
      }
      let known = sources.get(file);
      if (known === undefined) {
        const source = readFileSync(join(ROOT, file), 'utf8');
        const titles = titlesOf(source);
        known = { titles, texts: titles.map((re) => re.source.replace(/\\(.)/g, '$1')), source };
        sources.set(file, known);
      }
      if (!citedIn(known.titles, known.texts, c.name, known.source))
        problems.push(`docs/conformance.md:${c.line}: ${file} has no test \`${c.name}\``);
    }
    expect(problems).toEqual([]);
  });

  it('the filled claim (docs/conformance-claim.md) fills every cell, and each profile it exercises has its section here', () => {
    const claim = readFileSync(join(ROOT, 'docs/conformance-claim.md'), 'utf8');
    const rows = claim.split('\n').filter((l) => /^\| `acs-[a-z-]+` \|/.test(l));
    expect(rows.map((r) => /`(acs-[a-z-]+)`/.exec(r)?.[1])).toEqual(ACS_PROFILES);
    const sections = doc.split('\n').filter((l) => /^#{2,3} /.test(l));
    for (const row of rows) {
      const [profile, agent, guardian] = row
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim());
      // A state token, and a reason code from the template's closed list for every cell not EXERCISED.
      for (const cell of [agent, guardian]) {
        expect(cell, row).toMatch(
          /^(EXERCISED\b|NOT CLAIMED `(not-implemented|not-offered|governed-elsewhere|out-of-scope)`|NOT ESTABLISHED `(no-test|no-sink|not-negotiated|not-observed)`)/,
        );
      }
      if (guardian.startsWith('EXERCISED')) {
        const name = profile.replace(/`/g, '');
        const heading = sections.find((h) => h.toLowerCase().replace(/^#+ /, '').startsWith(name));
        expect(heading, `${name} is EXERCISED but docs/conformance.md has no section for it`).toBeDefined();
      }
    }
  });

  it('the checker finds a name that is not there', () => {
    const fake = '| req | dispatch.test.ts › `no such test anywhere` |\n';
    const [c] = citations(fake);
    expect(c).toEqual({ line: 1, file: 'dispatch.test.ts', name: 'no such test anywhere' });
    const titles = titlesOf(readFileSync(join(ROOT, resolve(c.file) as string), 'utf8'));
    const texts = titles.map((re) => re.source);
    expect(titles.length).toBeGreaterThan(5);
    expect(citedIn(titles, texts, c.name)).toBe(false);
    expect(citedIn(titles, texts, '-32700 for invalid JSON, id null, unsigned')).toBe(true);
  });
});
