// Rego parser (v1, and v0 on request): source text → AST (types.ts). Throws RegoErrors (code rego_parse_error) on bad input.
import { RegoError, RegoErrors } from '../errors.ts';
import { parseMetadataBlocks } from './annotations.ts';
import { assembleModule } from './module.ts';
import { MAX_DEPTH_MESSAGE, MAX_NESTING_DEPTH, Parser, REGO_KEYWORDS, REGO_V0_KEYWORDS } from './parser.ts';
import type { Annotations, Body, Location, Module } from './types.ts';

export type * from './types.ts';
export { MAX_NESTING_DEPTH, REGO_KEYWORDS, REGO_V0_KEYWORDS };

/** Upper bound on source size: bigger inputs are refused before lexing (fail fast on hostile input). */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

/**
 * Limit on the nesting of the finished AST (counted in JSON levels: a term is about two). Long operator
 * chains such as `1 + 1 + … + 1` parse iteratively but produce a deep tree, and every later stage walks
 * the tree recursively; refusing absurd depth here keeps them from overflowing the stack. OPA's parser recurses
 * once per operator, so past its limit it gives the same error, which this reports.
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
          MAX_DEPTH_MESSAGE,
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
      throw new RegoErrors([new RegoError('rego_parse_error', MAX_DEPTH_MESSAGE, { file, row: 1, col: 1 })]);
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

/**
 * Parse one Rego module (v1 unless `options.regoVersion` is 0), reporting errors as OPA's ParseModule does: the
 * parse stops at the first statement that fails, with that statement's errors and those of the METADATA blocks
 * read so far; a module that parses is then checked as a whole (package first, every statement a rule, the
 * Rego v1 keywords) with every error reported; only then are METADATA blocks attached.
 */
export function parseModule(file: string, text: string, options: ParseOptions = {}): Module {
  return guard(file, text, () => {
    const readAs = options.regoVersion ?? 1;
    const p = new Parser(file, text, readAs, options.templateStrings ?? true);
    const { statements, errors, stoppedAt } = p.parseStatements();
    // OPA reads the METADATA blocks among the comments its scanner got to, and reports their errors after the
    // parse's (with the source line, as its parser's errors have).
    const reached = errors.length ? p.tokenAt(stoppedAt).offset : Infinity;
    const blockErrors: RegoError[] = [];
    const blocks = parseMetadataBlocks(
      p.comments.filter((c) => (c.location.offset ?? 0) < reached),
      blockErrors,
    );
    const parseErrors = [...errors, ...blockErrors.map((e) => (e.location ? p.errorAt(e.location, e.message) : e))];
    if (parseErrors.length) throw new RegoErrors(parseErrors);
    if (statements.length === 0 && blocks.length === 0) {
      throw new RegoErrors([new RegoError('rego_parse_error', 'empty module', { file, row: 0, col: 0 })]);
    }

    const parts = assembleModule(file, statements, p.syntax, readAs, blocks[0]?.annotations.location);
    const annotationErrors: RegoError[] = [];
    const moduleAnnotations: Annotations[] = [];
    for (const block of blocks) {
      const target = parts.targets.find((t) => t.row > block.endRow);
      if (!target) continue; // a trailing block annotates nothing (OPA ignores it too)
      const a = block.annotations;
      if (target.pkg) {
        if (!block.explicitScope) a.scope = 'package';
        if (a.scope !== 'package' && a.scope !== 'subpackages') {
          annotationErrors.push(
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
          annotationErrors.push(
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
    if (annotationErrors.length) throw new RegoErrors(annotationErrors);

    checkAstDepth(file, parts.rules);
    return {
      package: parts.package,
      imports: parts.imports,
      rules: parts.rules,
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

/**
 * Parse a query such as `data.p.f(1) = x; y := 2`. Read as v0 (`opa eval --v0-compatible`), `in`, `every`, `if`
 * and `contains` are no keywords, as OPA's parseQuery applies the evaluation's Rego version to the query.
 */
export function parseQuery(text: string, file = 'query', options: ParseOptions = {}): Body {
  return guard(file, text, () => {
    const p = new Parser(file, text, options.regoVersion ?? 1, options.templateStrings ?? true);
    if (p.atEnd()) p.error(p.currentToken(), 'found empty body');
    const body = p.parseQueryBody();
    checkAstDepth(file, body);
    return body;
  });
}
