// The Rego semantic stage (OPA's ast.Compiler): modules → rule sets with resolved, renamed, safely ordered bodies, after
// OPA's checks (rule conflicts, safety, recursion, builtin calls, `with` targets). Throws RegoErrors
// (each with file:row:col; after 10, OPA's "error limit reached").
import { isGround } from '../ast/ground.ts';
import type { Body, Location, Module, RefTerm, Rule, Term } from '../ast/types.ts';
import { builtinDecls, refusedBuiltinArity } from '../builtins/declarations.ts';
import { withRefusedDeclarations } from '../builtins/refused.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import { isObject } from '../json.ts';
import { CallChecker, checkRecursion, ruleDependencies } from './checks.ts';
import { ruleConflicts } from './conflicts.ts';
import { COMPILE_ERROR_LIMIT, limitCompileErrors, limitQueryErrors } from './error-limit.ts';
import { importText, resolveGlobals } from './global-refs.ts';
import { resolveMetadataCalls } from './metadata.ts';
import { hoistNegatedOperands, hoistNegatedOperandsInTerm, splitOperands } from './negation.ts';
import { duplicateImports, rootDocumentOverrides } from './reserved-names.ts';
import { NameGen, Rewriter, type ScopeHandle } from './rewrite.ts';
import { SafetyChecker } from './safety.ts';
import { lowerTemplateStrings, lowerTemplateStringsInBody, reportUndeclared } from './template-strings.ts';
import { dataNameKey, isDataName, dataRef, forEachVar } from './terms.ts';
import { unusedLocalErrors } from './unused-locals.ts';
import {
  pathKey,
  type CompiledProgram,
  type CompiledRule,
  type CompileOptions,
  type RuleKind,
  type RuleSet,
} from './types.ts';

export type { CompiledProgram, CompiledRule, CompileOptions, RuleKind, RuleSet } from './types.ts';
export { pathKey } from './types.ts';
export { annotatedEntrypoints } from './metadata.ts';
export { transitiveDependents } from './checks.ts';

interface RawRule {
  module: Module;
  rule: Rule;
  path: string[];
  kind: RuleKind;
  /** All ref elements after the rule set path (`a.b[x].c := v` → [x, "c"]). */
  keyPath?: Term[];
  /** A `contains` rule whose set lives at `keyPath` inside the rule set's object. */
  multi?: boolean;
  arity: number;
}

/**
 * General ref heads (OPA v1): a rule set with variable path elements (`p[q].r := 1`) owns the whole
 * subtree below its path, so rules at deeper ground paths (`p.a.r := 0`, `p.b contains "x"`) become
 * definitions of that object at their remaining path; overlaps are checked when the object is built
 * (OPA's Wasm `object insert conflict`), as in OPA.
 */
function mergeIntoDynamic(groups: Map<string, RawRule[]>, errors: RegoError[]): void {
  const dynamic = [...groups.values()].filter((g) => g[0].kind === 'partial_object').map((g) => g[0].path);
  if (!dynamic.length) return;
  const keys = [...groups.keys()].sort((a, b) => b.split('/').length - a.split('/').length);
  for (const k of keys) {
    const g = groups.get(k)!;
    const path = g[0].path;
    let owner: string[] | undefined;
    for (const d of dynamic) {
      if (d.length < path.length && d.every((seg, i) => path[i] === seg) && (!owner || d.length > owner.length))
        owner = d;
    }
    if (!owner) continue;
    const target = groups.get(pathKey(owner))!;
    const extra: Term[] = path
      .slice(owner.length)
      .map((seg) => ({ type: 'string', value: seg, location: g[0].rule.head.location }));
    for (const r of g) {
      if (r.kind === 'function') {
        errors.push(
          new RegoError(
            'rego_compile_error',
            `function ${ruleSetName(r.path)} conflicts with rule ${ruleSetName(owner)}`,
            r.rule.location,
          ),
        );
        continue;
      }
      if (r.rule.else) {
        errors.push(
          new RegoError(
            'rego_compile_error',
            `else is not supported on rules inside the general reference ${ruleSetName(owner)}`,
            r.rule.location,
          ),
        );
        continue;
      }
      target.push({
        ...r,
        path: owner,
        kind: 'partial_object',
        keyPath: [...extra, ...(r.keyPath ?? [])],
        multi: r.multi || r.kind === 'partial_set',
      });
    }
    groups.delete(k);
  }
}

/**
 * OPA's storage.NonEmpty over the base documents: something is stored at `path`, or a prefix of it holds a value
 * that is not an object (an array indexed by a number-like key is read through, as OPA's inmem store does).
 */
function dataNonEmpty(data: Readonly<Record<string, unknown>>, path: readonly string[]): boolean {
  const read = (n: number): { found: boolean; value?: unknown } => {
    let node: unknown = data;
    for (const k of path.slice(0, n)) {
      if (Array.isArray(node)) {
        const i = /^[+-]?\d+$/.test(k) ? Number(k) : -1;
        if (i < 0 || i >= node.length) return { found: false };
        node = node[i];
      } else if (node !== null && typeof node === 'object' && Object.hasOwn(node, k)) {
        node = (node as Record<string, unknown>)[k];
      } else return { found: false };
    }
    return { found: true, value: node };
  };
  if (read(path.length).found) return true;
  for (let n = path.length - 1; n > 0; n--) {
    const r = read(n);
    // A scalar (an exact number from a data file included) or an array at a prefix: nothing can be stored below.
    if (r.found) return !isObject(r.value);
  }
  return false;
}

/**
 * OPA's CheckPathConflicts (ast/conflicts.go), run when the compiler knows the data it will evaluate against
 * (`opa eval -d`, `opa test`): every rule-tree node holding rules, reached through string keys only, must not be
 * a path the data occupies. The first rule at the node carries the error; a conflicting node's children are not
 * checked further.
 */
function checkDataConflicts(
  raws: readonly RawRule[],
  data: Readonly<Record<string, unknown>>,
  errors: RegoError[],
): void {
  // A rule sits at its head ref's ground prefix; a ground non-string key in it ends the string-keyed path there.
  const nodes = new Map<string, RawRule>();
  for (const r of raws) {
    const next = r.keyPath?.[0];
    if (next && isGround(next)) continue;
    const k = pathKey(r.path);
    if (!nodes.has(k)) nodes.set(k, r);
  }
  const conflicting: string[][] = [];
  const found: RegoError[] = [];
  for (const r of [...nodes.values()].sort((a, b) => a.path.length - b.path.length)) {
    if (conflicting.some((c) => c.every((seg, i) => r.path[i] === seg))) continue;
    if (!dataNonEmpty(data, r.path)) continue;
    conflicting.push(r.path);
    found.push(
      new RegoError('rego_compile_error', `conflicting rule for data path ${r.path.join('/')} found`, r.rule.location),
    );
  }
  // OPA walks the tree's children in map order; report in source order.
  found.sort((a, b) => compareLocations(a.location, b.location));
  errors.push(...found);
}

function compareLocations(a: Location | undefined, b: Location | undefined): number {
  if (!a || !b) return a ? -1 : b ? 1 : 0;
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return a.row - b.row || a.col - b.col;
}

function packagePath(m: Module): string[] {
  return m.package.path
    .slice(1)
    .map((t) =>
      t.type === 'string' ? t.value : t.type === 'var' ? t.value : String((t as { value?: unknown }).value),
    );
}

/** Classify a rule head into its rule set path and kind (OPA: ref heads grouped by their all-string prefix). */
function classify(m: Module, rule: Rule, errors: RegoError[]): RawRule | undefined {
  const pkg = packagePath(m);
  const ref = rule.head.reference;
  const first = ref[0];
  if (first?.type !== 'var') {
    errors.push(
      new RegoError('rego_compile_error', 'rule head must start with a name', rule.location ?? rule.head.location),
    );
    return undefined;
  }
  const path = [...pkg, first.value];
  let i = 1;
  for (; i < ref.length; i++) {
    const e = ref[i];
    if (e.type !== 'string') break;
    path.push(e.value);
  }
  const remaining = ref.slice(i);
  const isFn = rule.head.args !== undefined && rule.head.args.length > 0;
  const where = rule.head.location ?? rule.location;
  if (isFn) {
    if (remaining.length) {
      errors.push(new RegoError('rego_compile_error', 'function name must be a ground reference', where));
      return undefined;
    }
    return { module: m, rule, path, kind: 'function', arity: rule.head.args!.length };
  }
  if (rule.head.kind === 'multi') {
    // `p[q] contains r`: an object whose leaves are sets.
    if (remaining.length)
      return { module: m, rule, path, kind: 'partial_object', keyPath: remaining, multi: true, arity: 0 };
    return { module: m, rule, path, kind: 'partial_set', arity: 0 };
  }
  if (remaining.length === 0) return { module: m, rule, path, kind: 'complete', arity: 0 };
  return { module: m, rule, path, kind: 'partial_object', keyPath: remaining, arity: 0 };
}

function ruleSetName(path: readonly string[]): string {
  return ['data', ...path].join('.');
}

/** Compile parsed modules into a program the planner can lower to IR. */
export function compileModules(modules: Module[], options: CompileOptions = {}): CompiledProgram {
  try {
    return compileModulesUnguarded(modules, options);
  } catch (e) {
    // Every walk is depth-bounded; this keeps "an error, never a crash" for pathological rule chains.
    if (e instanceof RangeError)
      throw new RegoErrors([new RegoError('rego_compile_error', 'policy too deeply nested to compile')]);
    throw e;
  }
}

function compileModulesUnguarded(modules: Module[], options: CompileOptions): CompiledProgram {
  const maxErrors = options.maxErrors ?? COMPILE_ERROR_LIMIT;
  const declared = options.builtins ?? builtinDecls;
  const builtins =
    options.refusedBuiltins === 'evaluation-error'
      ? withRefusedDeclarations(declared, options.builtins ? (options.deferredRefused ?? new Set()) : undefined)
      : declared;
  const errors: RegoError[] = [];
  const flush = (): void => {
    if (errors.length) throw new RegoErrors(limitCompileErrors(errors, maxErrors));
  };
  const strict = options.strict === true;

  // OPA's first stages, each stopping the compile with its errors: ResolveRefs (strict: unused imports),
  // CheckKeywordOverrides and CheckDuplicateImports (v1 modules; strict: all), RewriteLocalVars (its
  // unused-name errors). They visit modules by file name.
  const ordered = [...modules].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const resolution = resolveGlobals(ordered);
  for (const m of ordered) {
    errors.push(...(resolution.errors.get(m) ?? []));
    if (strict)
      for (const imp of resolution.unusedImports.get(m) ?? [])
        errors.push(new RegoError('rego_compile_error', `${importText(imp)} unused`, imp.location));
  }
  flush();
  for (const m of ordered) if (strict || m.regoVersion === 1) errors.push(...rootDocumentOverrides(m));
  flush();
  for (const m of ordered) if (strict || m.regoVersion === 1) errors.push(...duplicateImports(m));
  flush();
  errors.push(...unusedLocalErrors(ordered, resolution, strict));
  flush();

  // 0. Template strings become internal.template_string calls (OPA's RewriteTemplateStrings), then
  // rego.metadata.chain()/rule() the constants the METADATA blocks give, in OPA's stage order.
  const holes = lowerTemplateStrings(modules, builtins, errors);
  flush();
  resolveMetadataCalls(modules);

  // 1. Rule sets by path, with conflict checks.
  const raws: RawRule[] = [];
  for (const m of modules)
    for (const r of m.rules) {
      const c = classify(m, r, errors);
      if (c) raws.push(c);
    }
  const groups = new Map<string, RawRule[]>();
  for (const r of raws) {
    const k = pathKey(r.path);
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  // OPA's CheckRuleConflicts (conflicts.ts); then what its later stages or planner would reject at one path.
  errors.push(...ruleConflicts(groups.values(), modules));
  for (const [, g] of groups) {
    const name = ruleSetName(g[0].path);
    // Kinds OPA's check lets through together (`p contains 1` with `p[x] contains 2`) but one rule set cannot hold.
    if (!errors.length && new Set(g.map((r) => r.kind)).size > 1)
      errors.push(new RegoError('rego_type_error', `conflicting rules ${name} found`, g[0].rule.location));
    for (const d of g.filter((r) => r.rule.default)) {
      if (
        d.rule.body.length > 0 &&
        !(
          d.rule.body.length === 1 &&
          d.rule.body[0].terms.type === 'term' &&
          d.rule.body[0].terms.term.type === 'boolean' &&
          d.rule.body[0].terms.term.value === true
        )
      ) {
        errors.push(new RegoError('rego_compile_error', `default rule ${name} must not have a body`, d.rule.location));
      }
      if (d.kind === 'partial_set' || d.kind === 'partial_object')
        errors.push(
          new RegoError(
            'rego_compile_error',
            `default rules must not be multi-value or have variable reference heads: ${name}`,
            d.rule.location,
          ),
        );
    }
  }
  // After the per-path checks: merged rules keep their own kinds' checks (a ground default may live
  // inside a general-ref object).
  mergeIntoDynamic(groups, errors);
  const pkgPaths = modules.map(packagePath);
  if (options.data) checkDataConflicts(raws, options.data, errors);
  flush();

  // 2. Globals per package: rule names and import aliases.
  const pkgRules = new Map<string, Set<string>>();
  for (const r of raws) {
    const pk = pathKey(packagePath(r.module));
    const first = r.rule.head.reference[0];
    if (first?.type !== 'var') continue;
    let s = pkgRules.get(pk);
    if (!s) pkgRules.set(pk, (s = new Set()));
    s.add(first.value);
  }
  const names = new NameGen();
  const arityOf = (name: string): number | undefined => {
    if (isDataName(name)) {
      const g = groups.get(dataNameKey(name));
      return g && g[0].kind === 'function' ? g[0].arity : undefined;
    }
    const d = builtins.get(name);
    if (!d) return refusedBuiltinArity.get(name);
    if (d.decl.variadic) return undefined;
    return d.decl.result === undefined ? undefined : (d.decl.args?.length ?? 0);
  };
  const isFunction = (name: string): boolean =>
    isDataName(name) ? groups.get(dataNameKey(name))?.[0].kind === 'function' : builtins.has(name);
  const safety = new SafetyChecker({ arity: arityOf, isFunction, errors, split: (e) => splitOperands(e, names) });

  const ruleSets = new Map<string, RuleSet>();
  const moduleGlobals = new Map<Module, Map<string, RefTerm>>();
  for (const m of modules) {
    const pkg = packagePath(m);
    const globals = new Map<string, RefTerm>();
    for (const name of pkgRules.get(pathKey(pkg)) ?? []) globals.set(name, dataRef([...pkg, name], m.package.location));
    for (const imp of m.imports) {
      const head = imp.path.value[0];
      if (head?.type !== 'var') continue;
      if (head.value === 'future' || head.value === 'rego') continue;
      if (head.value !== 'data' && head.value !== 'input') {
        errors.push(new RegoError('rego_compile_error', 'import path must begin with input or data', imp.location));
        continue;
      }
      const last = imp.path.value[imp.path.value.length - 1];
      const alias = imp.alias ?? (last.type === 'string' ? last.value : last.type === 'var' ? last.value : undefined);
      if (!alias) continue;
      if (imp.path.value.length === 1 && !imp.alias) continue;
      if (globals.has(alias) && pkgRules.get(pathKey(pkg))?.has(alias)) {
        errors.push(
          new RegoError('rego_compile_error', `import must not shadow ${ruleSetName([...pkg, alias])}`, imp.location),
        );
        continue;
      }
      globals.set(alias, imp.path);
    }
    moduleGlobals.set(m, globals);
  }
  flush();

  // 3. Rewrite rule bodies and heads; reorder for safety.
  const rewriteChain = (raw: RawRule): CompiledRule => {
    const rw = new Rewriter({ globals: moduleGlobals.get(raw.module)!, names, errors });
    const argScope = rw.newScope();
    const args = raw.kind === 'function' ? rw.declareArgs(raw.rule.head.args ?? [], argScope) : [];
    const argVars = new Set<string>();
    for (const a of args) forEachVar(a, (v) => argVars.add(v.value));
    const one = (rule: Rule, keyPath: Term[] | undefined, inheritedValue: boolean): CompiledRule => {
      const scope: ScopeHandle = rw.newScope(argScope);
      let body: Body = rw.rewriteBody(rule.body, scope);
      const multi = raw.kind === 'partial_set' || raw.multi === true;
      // For partial sets and `contains` leaves the head key is the element.
      const element = multi ? rule.head.key : undefined;
      const relement = element ? rw.rewriteTerm(element, scope) : undefined;
      const rpath = keyPath?.map((t) => rw.rewriteTerm(t, scope));
      const value = multi
        ? undefined
        : (rule.head.value ??
          (inheritedValue ? ({ type: 'boolean', value: true, location: rule.location } as Term) : undefined));
      let rvalue = value ? rw.rewriteTerm(value, scope) : undefined;
      const headTerms = [relement, rvalue, ...(rpath ?? [])].filter((t): t is Term => !!t);
      const r = safety.reorder(body, argVars, headTerms);
      body = hoistNegatedOperands(r.body, names);
      const reordered = (t: Term): Term => hoistNegatedOperandsInTerm(safety.reorderTerm(t, r.bound), names);
      rvalue = rvalue ? reordered(rvalue) : undefined;
      const finalPath = rpath?.map(reordered);
      const finalElement = relement ? reordered(relement) : undefined;
      return {
        kind: raw.kind,
        default: rule.default,
        args,
        key: raw.kind === 'partial_set' ? finalElement : finalPath?.[0],
        keyPath: finalPath,
        element: raw.kind === 'partial_object' && multi ? finalElement : undefined,
        value: rvalue,
        body,
        location: rule.location ?? rule.head.location,
        file: raw.module.file,
      };
    };
    const top = one(raw.rule, raw.keyPath, true);
    let cur = top;
    for (let e = raw.rule.else; e; e = e.else) {
      cur.else = one(e, undefined, true);
      cur = cur.else;
    }
    return top;
  };

  for (const [k, g] of groups) {
    const compiled = g.map((raw) => ({ raw, c: rewriteChain(raw) }));
    const first = g[0];
    ruleSets.set(k, {
      path: first.path,
      kind: first.kind,
      arity: first.arity,
      // General-ref objects keep merged defaults among their rules (flagged `default`): each fills its
      // own path only when no other rule defined it.
      rules:
        first.kind === 'partial_object'
          ? compiled.map((x) => x.c)
          : compiled.filter((x) => !x.raw.rule.default).map((x) => x.c),
      defaultRule: first.kind === 'partial_object' ? undefined : compiled.find((x) => x.raw.rule.default)?.c,
      location: first.rule.location ?? first.rule.head.location,
    });
    if (maxErrors > 0 && errors.length >= maxErrors) break;
  }
  reportUndeclared(errors, holes);
  flush();

  // 4. Calls, with targets, recursion.
  const builtinsUsed = new Set<string>();
  // Strict mode refuses deprecated builtins in v0 modules too (OPA's checkDeprecatedBuiltins).
  const v0Files = new Set(strict ? [] : modules.filter((m) => m.regoVersion === 0).map((m) => m.file));
  const checker = new CallChecker({
    ruleSetsByPath: ruleSets,
    errors,
    builtinsUsed,
    v0Files,
    builtins,
    ...(options.builtins ? { listedRefused: options.deferredRefused ?? new Set<string>() } : {}),
  });
  for (const rs of ruleSets.values()) {
    for (const r of rs.rules) checker.checkRule(r);
    if (rs.defaultRule) checker.checkRule(rs.defaultRule);
  }
  flush();
  const all = [...ruleSets.values()];
  const dependencies = ruleDependencies(all);
  checkRecursion(all, dependencies, errors);
  flush();

  return {
    modules,
    ruleSets: all,
    ruleSetsByPath: ruleSets,
    packages: pkgPaths,
    builtinsUsed,
    builtins,
    dependencies,
  };
}

/** A query variable bound in results: `name` as written, `var` as renamed in the compiled body. */
export interface QueryVar {
  name: string;
  var: string;
}

/**
 * Compile an ad-hoc query against a program: resolve refs, rename locals and reorder for safety.
 * Returns the rewritten body and the query's user-visible variable names.
 */
export function compileQuery(
  program: CompiledProgram,
  body: Body,
  options: { regoVersion?: 0 | 1 } = {},
): { body: Body; vars: QueryVar[] } {
  const queryFile = body[0]?.location?.file ?? 'query';
  const errors: RegoError[] = [];
  const holes = lowerTemplateStringsInBody(body, program.builtins, errors);
  if (errors.length) throw new RegoErrors(limitQueryErrors(errors, COMPILE_ERROR_LIMIT));
  const names = new NameGen();
  const rw = new Rewriter({ globals: new Map(), names, errors });
  const scope = rw.newScope();
  const rewritten = rw.rewriteBody(body, scope);
  const arityOf = (name: string): number | undefined => {
    if (isDataName(name)) {
      const rs = program.ruleSetsByPath.get(dataNameKey(name));
      return rs && rs.kind === 'function' ? rs.arity : undefined;
    }
    const d = program.builtins.get(name);
    if (!d || d.decl.variadic) return undefined;
    return d.decl.result === undefined ? undefined : (d.decl.args?.length ?? 0);
  };
  const isFunction = (name: string): boolean =>
    isDataName(name) ? program.ruleSetsByPath.get(dataNameKey(name))?.kind === 'function' : program.builtins.has(name);
  const safety = new SafetyChecker({ arity: arityOf, isFunction, errors, split: (e) => splitOperands(e, names) });
  const r = safety.reorder(rewritten, new Set(), []);
  reportUndeclared(errors, holes);
  r.body = hoistNegatedOperands(r.body, names);
  const checker = new CallChecker({
    ruleSetsByPath: program.ruleSetsByPath,
    errors,
    builtinsUsed: new Set(),
    builtins: program.builtins,
    // A v0 query may call deprecated builtins (all, any, …) as a v0 module may.
    ...(options.regoVersion === 0 ? { v0Files: new Set([queryFile]) } : {}),
  });
  checker.checkQuery(r.body, queryFile);
  if (errors.length) throw new RegoErrors(limitQueryErrors(errors, COMPILE_ERROR_LIMIT));
  const vars: QueryVar[] = [];
  const seen = new Set<string>();
  for (const e of r.body) {
    // A call operator (`count` in `x := count(y)`) names a function, never a query variable.
    const visit = (t: Term): void =>
      forEachVar(
        t,
        (v) => {
          if (v.wildcard || v.value === 'input' || v.value === 'data' || seen.has(v.value)) return;
          if (v.value.startsWith('$') && !v.original) return;
          seen.add(v.value);
          vars.push({ name: v.original ?? v.value, var: v.value });
        },
        { callOperators: false },
      );
    const x = e.terms;
    if (x.type === 'term') visit(x.term);
    else if (x.type === 'call') x.args.forEach(visit);
    else if (x.type === 'somein') {
      if (x.key) visit(x.key);
      visit(x.value);
      visit(x.domain);
    } else if (x.type === 'every') visit(x.domain);
  }
  return { body: r.body, vars };
}
