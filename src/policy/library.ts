// The ACS policy library in rego/: load its sources, read the `# METADATA` annotations that name every
// finding rule (the source of policy_references), and build the deployable bundle (bundles/acs.tar.gz).
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileBundle, parseSources, type RegoSource } from '../rego/index.ts';
import type { Module, Term } from '../rego/ast/types.ts';

/** Default location of the library sources and of the built bundle (repository layout). */
export const LIBRARY_DIR = fileURLToPath(new URL('../../rego', import.meta.url));
export const DEFAULT_BUNDLE_PATH = fileURLToPath(new URL('../../bundles/acs.tar.gz', import.meta.url));
export const DECISION_ENTRYPOINT = 'acs/decision';

/** One finding rule as its METADATA annotation declares it. */
export interface PolicyRuleAnnotation {
  policy_id: string;
  policy_name: string;
  rule_id: string;
  reason_code: string;
  title: string;
  file: string;
  row: number;
}

export interface LibrarySources {
  /** Non-test modules, paths relative to the library root (`acs/baseline/baseline.rego`). */
  sources: RegoSource[];
  /** Test modules (`*_test.rego`). */
  tests: RegoSource[];
  /** Merged data.json files, mounted at their directory (OPA rule). */
  data: Record<string, unknown>;
}

function walk(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? walk(p) : [p];
    });
}

/** Reads the library: sources, tests and data (data.json in a subdirectory is mounted at its path). */
export function readLibrary(dir: string = LIBRARY_DIR): LibrarySources {
  const sources: RegoSource[] = [];
  const tests: RegoSource[] = [];
  const data: Record<string, unknown> = {};
  for (const file of walk(dir)) {
    const rel = relative(dir, file).split(sep).join('/');
    if (file.endsWith('_test.rego')) tests.push({ file: rel, text: readFileSync(file, 'utf8') });
    else if (file.endsWith('.rego')) sources.push({ file: rel, text: readFileSync(file, 'utf8') });
    else if (rel === 'data.json' || rel.endsWith('/data.json')) {
      const segments = rel.split('/').slice(0, -1);
      let node = data;
      for (const seg of segments) node = (node[seg] ??= {}) as Record<string, unknown>;
      Object.assign(node, JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>);
    }
  }
  return { sources, tests, data };
}

/**
 * The library's data with what acs.pii can take from data instead of computing it on every evaluation:
 * `acs_config.pii.national_phone_alternation` = `{of: <national_phones>, pattern: <their alternation>}`, the
 * alternation acs.pii would build (each pattern in `(?:…)`, in key order, joined by `|`). acs.pii uses it only
 * while `of` equals the configured `national_phones` (else it builds the alternation itself), so data replaced
 * or edited later cannot make it stale. A pattern in data is static: the engine hands it to the regex host
 * call without dumping it out of the module on every evaluation.
 */
export function withDerivedData(data: Record<string, unknown>): Record<string, unknown> {
  const config = data.acs_config as Record<string, unknown> | undefined;
  const pii = config?.pii as Record<string, unknown> | undefined;
  const phones = pii?.national_phones;
  if (phones === null || typeof phones !== 'object' || Array.isArray(phones)) return data;
  const entries = Object.entries(phones as Record<string, unknown>);
  if (entries.some(([, p]) => typeof p !== 'string')) return data;
  // Rego's object order: keys sorted by their UTF-8 bytes.
  entries.sort(([a], [b]) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
  const pattern = entries.map(([, p]) => `(?:${p as string})`).join('|');
  return { ...data, acs_config: { ...config, pii: { ...pii, national_phone_alternation: { of: phones, pattern } } } };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** The rule-level METADATA of every finding rule: custom.policy_id / rule_id / reason_code, title. */
export function ruleAnnotations(modules: Module[]): PolicyRuleAnnotation[] {
  const out: PolicyRuleAnnotation[] = [];
  for (const m of modules) {
    for (const rule of m.rules) {
      for (const a of rule.annotations ?? []) {
        const custom = a.custom ?? {};
        const policy_id = str(custom.policy_id);
        const rule_id = str(custom.rule_id);
        if (!policy_id || !rule_id) continue;
        out.push({
          policy_id,
          policy_name: str(custom.policy_name) ?? policy_id,
          rule_id,
          reason_code: str(custom.reason_code) ?? '',
          title: a.title ?? '',
          file: m.file,
          row: rule.location?.row ?? 0,
        });
      }
    }
  }
  return out.sort((x, y) => (x.rule_id < y.rule_id ? -1 : x.rule_id > y.rule_id ? 1 : 0));
}

/** String members of a finding object literal (`findings contains {...}`, or a part such as `deny_findings`), for consistency checks. */
export function findingLiterals(modules: Module[]): { file: string; row: number; fields: Record<string, string> }[] {
  const out: { file: string; row: number; fields: Record<string, string> }[] = [];
  for (const m of modules) {
    for (const rule of m.rules) {
      const head = rule.head;
      const name = head.reference[0] as Term;
      if (
        head.kind !== 'multi' ||
        name.type !== 'var' ||
        !/^(?:\w+_)?findings$/.test(name.value) ||
        head.key?.type !== 'object'
      )
        continue;
      const fields: Record<string, string> = {};
      for (const [k, v] of head.key.value) {
        if (k.type === 'string' && v.type === 'string') fields[k.value] = v.value;
      }
      out.push({ file: m.file, row: rule.location?.row ?? 0, fields });
    }
  }
  return out;
}

export interface BuildLibraryOptions {
  dir?: string;
  /** Where to write the .tar.gz; omitted ⇒ not written. */
  out?: string;
  revision?: string;
}

/**
 * Compiles the library to an OPA bundle with the `acs/decision` entrypoint. The manifest metadata carries
 * the annotation table (`policy_rules`), so a deployment can list what each policy_reference means.
 */
export async function buildLibraryBundle(
  options: BuildLibraryOptions = {},
): Promise<{ bundle: Uint8Array; revision: string; rules: PolicyRuleAnnotation[] }> {
  const lib = readLibrary(options.dir ?? LIBRARY_DIR);
  const rules = ruleAnnotations(parseSources(lib.sources));
  const compiled = await compileBundle({
    sources: lib.sources,
    entrypoints: [DECISION_ENTRYPOINT],
    data: withDerivedData(lib.data),
    ...(options.revision ? { revision: options.revision } : {}),
    metadata: { library: 'acs', policy_rules: rules.map(({ file: _f, row: _r, ...r }) => r) },
    recordInputPaths: true,
  });
  if (options.out) {
    mkdirSync(dirname(options.out), { recursive: true });
    writeFileSync(options.out, compiled.bundle);
  }
  return { bundle: compiled.bundle, revision: compiled.manifest.revision ?? '', rules };
}
