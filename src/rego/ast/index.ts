// Rego parser (v1, and v0 on request): source text → AST (types.ts). Throws RegoErrors (code rego_parse_error) on bad input.
import { RegoError, RegoErrors } from '../errors.ts';
import { parseMetadataBlocks } from './annotations.ts';
import { MAX_NESTING_DEPTH, Parser, REGO_KEYWORDS, REGO_V0_KEYWORDS } from './parser.ts';
import type { Annotations, Body, Import, Location, Module, Package, Rule } from './types.ts';

export type * from './types.ts';
export { MAX_NESTING_DEPTH, REGO_KEYWORDS, REGO_V0_KEYWORDS };

/** Upper bound on source size: bigger inputs are refused before lexing (fail fast on hostile input). */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

/**
 * Limit on the nesting of the finished AST (counted in JSON levels: a term is about two). Long operator
 * chains such as `1 + 1 + … + 1` parse iteratively but produce a deep tree, and every later stage walks
 * the tree recursively; refusing absurd depth here keeps them from overflowing the stack.
 */
export const MAX_AST_DEPTH = 2000;

function checkAstDepth(file: string, root: unknown): void {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth > MAX_AST_DEPTH) {
      const loc = (node as { location?: Location }).location;
      throw new RegoErrors([
        new RegoError(
          'rego_parse_error',
          `expression nested too deeply (limit ${MAX_AST_DEPTH} levels)`,
          loc ? { file: loc.file, row: loc.row, col: loc.col } : { file, row: 1, col: 1 },
        ),
      ]);
    }
    if (Array.isArray(node)) {
      for (const x of node) stack.push([x, depth + 1]);
    } else {
      for (const [k, v] of Object.entries(node))
        if (k !== 'location' && typeof v === 'object') stack.push([v, depth + 1]);
    }
  }
}

function guard<T>(file: string, text: string, fn: () => T): T {
  if (text.length > MAX_SOURCE_BYTES) {
    throw new RegoErrors([
      new RegoError('rego_parse_error', `source too large (${text.length} characters, limit ${MAX_SOURCE_BYTES})`, {
        file,
        row: 1,
        col: 1,
      }),
    ]);
  }
  try {
    return fn();
  } catch (e) {
    // The depth limit should make this unreachable; keep the promise "error, never a crash" anyway.
    if (e instanceof RangeError) {
      throw new RegoErrors([new RegoError('rego_parse_error', 'input too deeply nested', { file, row: 1, col: 1 })]);
    }
    throw e;
  }
}

export interface ParseOptions {
  /**
   * Rego version to read the module as (default 1). A v0 module that imports `rego.v1` is read as v1, as
   * OPA does under `--v0-compatible`.
   */
  regoVersion?: 0 | 1;
  /**
   * OPA's `template_strings` capabilities feature (default true): without it a template string is the parse
   * error "template strings are not supported by current capabilities", as with `opa build --capabilities`.
   */
  templateStrings?: boolean;
}

/** Parse one Rego module (v1 unless `options.regoVersion` is 0). */
export function parseModule(file: string, text: string, options: ParseOptions = {}): Module {
  return guard(file, text, () => {
    const p = new Parser(file, text, options.regoVersion ?? 1, options.templateStrings ?? true);
    const pkg: Package = p.parsePackage();
    const imports: Import[] = [];
    const rules: Rule[] = [];
    /** Statement start rows, for attaching METADATA blocks. */
    const targets: { row: number; rules?: Rule[]; pkg?: true }[] = [{ row: pkg.location?.row ?? 1, pkg: true }];
    while (!p.atEnd()) {
      p.requireStatementBoundary();
      if (p.isKeywordHere('import')) {
        imports.push(p.parseImport());
        continue;
      }
      if (p.isKeywordHere('package'))
        p.error(p.currentToken(), 'unexpected package keyword: only one package declaration per module');
      const row = p.currentToken().row;
      const parsed = p.parseRules();
      rules.push(...parsed);
      targets.push({ row, rules: parsed });
    }

    const errors: RegoError[] = [];
    const moduleAnnotations: Annotations[] = [];
    for (const block of parseMetadataBlocks(p.comments, errors)) {
      const target = targets.find((t) => t.row > block.endRow);
      if (!target) continue; // a trailing block annotates nothing (OPA ignores it too)
      const a = block.annotations;
      if (target.pkg) {
        if (!block.explicitScope) a.scope = 'package';
        if (a.scope !== 'package' && a.scope !== 'subpackages') {
          errors.push(
            new RegoError(
              'rego_parse_error',
              `annotation scope '${a.scope}' must be applied to rule (have package)`,
              a.location,
            ),
          );
          continue;
        }
        moduleAnnotations.push(a);
      } else if (target.rules) {
        if (a.scope === 'package' || a.scope === 'subpackages') {
          errors.push(
            new RegoError('rego_parse_error', `annotation scope '${a.scope}' must be applied to package`, a.location),
          );
          continue;
        }
        // A rule-scoped block annotates the statement's first rule only, not the rules its chained bodies
        // define (OPA's attachRuleAnnotations hands each to one rule); a document-scoped one annotates all.
        for (const r of a.scope === 'document' ? target.rules : target.rules.slice(0, 1))
          (r.annotations ??= []).push(a);
      }
    }
    if (errors.length) throw new RegoErrors(errors);

    checkAstDepth(file, rules);
    return {
      package: pkg,
      imports,
      rules,
      annotations: moduleAnnotations,
      comments: p.comments,
      file,
      regoVersion: p.regoVersion,
    };
  });
}

/** Parses several files, collecting every file's parse errors instead of stopping at the first failing file. */
export function parseModules(
  sources: readonly { file: string; text: string; regoVersion?: 0 | 1 }[],
  options: Omit<ParseOptions, 'regoVersion'> = {},
): {
  modules: Module[];
  errors: RegoError[];
} {
  const modules: Module[] = [];
  const errors: RegoError[] = [];
  for (const s of sources) {
    try {
      modules.push(parseModule(s.file, s.text, { ...options, regoVersion: s.regoVersion }));
    } catch (e) {
      if (!(e instanceof RegoErrors)) throw e;
      errors.push(...e.errors);
    }
  }
  return { modules, errors };
}

/** Parse a query such as `data.p.f(1) = x; y := 2`. */
export function parseQuery(text: string, file = 'query', options: Omit<ParseOptions, 'regoVersion'> = {}): Body {
  return guard(file, text, () => {
    const p = new Parser(file, text, 1, options.templateStrings ?? true);
    if (p.atEnd()) p.error(p.currentToken(), 'found empty body');
    const body = p.parseQueryBody();
    checkAstDepth(file, body);
    return body;
  });
}
