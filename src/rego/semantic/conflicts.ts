// OPA's CheckRuleConflicts stage (v1/ast/compile.go checkRuleConflicts): rules at one ground-prefix path
// (OPA's rule tree node) must agree in kind, arity and completeness, have at most one default, and a
// ground rule's document cannot have rules or packages below it. OPA reports all of these as
// rego_type_error, with these texts and locations.
import { isGround } from '../ast/ground.ts';
import type { Location, Module, Rule, Term } from '../ast/types.ts';
import { refString } from '../ast/parser.ts';
import { RegoError } from '../errors.ts';

/** One rule as placed in OPA's rule tree: at `path` (package path + the head ref's string prefix). */
export interface PlacedRule {
  module: Module;
  rule: Rule;
  path: readonly string[];
}

/** `file:row`, as OPA prints a location inside a message (location.String). */
function locationText(l: Location | undefined): string {
  return l ? `${l.file}:${l.row}` : '';
}

/** The head ref's terms with a wildcard rule name as OPA names it (`$0`, a plain var). */
function headRef(rule: Rule): Term[] {
  return rule.head.reference.map((t) => (t.type === 'var' && t.wildcard ? { ...t, wildcard: false } : t));
}

/** The rule's full ref (OPA's Rule.Ref: package path extended by the head ref, its name a string). */
function fullRef(p: PlacedRule): Term[] {
  const [first, ...rest] = headRef(p.rule);
  const name: Term = first.type === 'var' ? { type: 'string', value: first.value, location: first.location } : first;
  return [...p.module.package.path, name, ...rest];
}

/** Whether the head ref after the name holds no variable (OPA's Ref.IsGround on the rule's ref). */
function groundHead(rule: Rule): boolean {
  return rule.head.reference.slice(1).every(isGround);
}

// OPA orders values of different types null < boolean < number < string < var < ref < composites (compare.go).
const TYPE_ORDER: Record<string, number> = { null: 0, boolean: 1, number: 2, string: 3, var: 4, ref: 5 };

function elementKey(t: Term): string {
  if (t.type === 'string' || t.type === 'var' || t.type === 'number') return `${t.type}:${t.value}`;
  if (t.type === 'boolean') return `boolean:${t.value}`;
  return `${t.type}:${t.location?.text ?? ''}`;
}

function compareTerms(a: Term, b: Term): number {
  const ta = TYPE_ORDER[a.type] ?? 6;
  const tb = TYPE_ORDER[b.type] ?? 6;
  if (ta !== tb) return ta - tb;
  if (a.type === 'number' && b.type === 'number') return Number(a.value) - Number(b.value);
  const ka = elementKey(a);
  const kb = elementKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** OPA's RefCompare: element by element, a shorter ref first. */
function compareRefs(a: Term[], b: Term[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareTerms(a[i], b[i]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

const hasPrefix = (ref: Term[], prefix: Term[]): boolean =>
  prefix.length <= ref.length && prefix.every((t, i) => elementKey(t) === elementKey(ref[i]));

/** OPA's refSet.AddPrefix over the rules below a node: refs that no other collected ref prefixes, sorted. */
function flattenChildren(rules: PlacedRule[]): Term[][] {
  let set: Term[][] = [];
  for (const r of rules) {
    const ref = fullRef(r);
    if (set.some((s) => hasPrefix(ref, s))) continue;
    set = [ref, ...set.filter((s) => !hasPrefix(s, ref))];
  }
  return set.sort(compareRefs);
}

const byFile = (a: PlacedRule, b: PlacedRule): number =>
  a.module.file < b.module.file ? -1 : a.module.file > b.module.file ? 1 : 0;

/** The package as OPA prints it in messages (Package.String): `package a.b`. */
function packageText(m: Module): string {
  const [, first, ...rest] = m.package.path;
  const head: Term = first.type === 'string' ? { type: 'var', value: first.value } : first;
  return `package ${refString([head, ...rest])}`;
}

/**
 * The errors of OPA's checkRuleConflicts for rules grouped by path (each group in module order): per group the
 * first of "rule … conflicts with [...]", "conflicting rules … found", "multiple default rules … found at …";
 * then packages declared at a ground rule's path.
 */
export function ruleConflicts(groups: Iterable<PlacedRule[]>, modules: readonly Module[]): RegoError[] {
  const errors: RegoError[] = [];
  const all = [...groups].map((g) => [...g].sort(byFile));
  all.sort((a, b) => (a[0].path.join('\0') < b[0].path.join('\0') ? -1 : 1));
  for (const g of all) {
    const path = g[0].path;
    // Rules of one node come in module order; the message names the ref of the last (checkRuleConflicts' `name`).
    const name = refString(fullRef(g[g.length - 1]));
    const where = g[0].rule.location ?? g[0].rule.head.location;
    const below = all.filter((o) => o[0].path.length > path.length && path.every((s, i) => o[0].path[i] === s)).flat();
    if (below.length && g.some((r) => groundHead(r.rule))) {
      const refs = flattenChildren(below).map(refString);
      errors.push(new RegoError('rego_type_error', `rule ${name} conflicts with [${refs.join(' ')}]`, where));
      continue;
    }
    const kinds = new Set(g.map((r) => r.rule.head.kind));
    const arities = new Set(g.map((r) => r.rule.head.args?.length ?? 0));
    const complete = g.filter((r) => r.rule.head.kind === 'single' && groundHead(r.rule)).length;
    if (kinds.size > 1 || arities.size > 1 || (complete >= 1 && complete < g.length)) {
      errors.push(new RegoError('rego_type_error', `conflicting rules ${name} found`, where));
      continue;
    }
    const defaults = g.filter((r) => r.rule.default);
    if (defaults.length > 1) {
      const at = defaults.map((d) => locationText(d.rule.location)).join(', ');
      errors.push(
        new RegoError(
          'rego_type_error',
          `multiple default rules ${name} found at ${at}`,
          defaults[0].module.package.location,
        ),
      );
    }
  }
  // A package declared exactly at the path of a rule whose head ref is ground (OPA walks the module tree).
  const ordered = [...modules].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const pkgKey = (m: Module): string | undefined => {
    const parts: string[] = [];
    for (const t of m.package.path.slice(1)) {
      if (t.type !== 'string') return undefined;
      parts.push(t.value);
    }
    return parts.join('\0');
  };
  for (const m of ordered) {
    const base = pkgKey(m);
    if (base === undefined) continue;
    for (const rule of m.rules) {
      const ref = headRef(rule);
      if (!ref.slice(1).every((t) => t.type === 'string')) continue;
      const names = ref.map((t) => (t.type === 'var' || t.type === 'string' ? t.value : ''));
      const key = [base, ...names].join('\0');
      for (const other of ordered) {
        if (other === m || pkgKey(other) !== key) continue;
        errors.push(
          new RegoError(
            'rego_type_error',
            `${packageText(other)} conflicts with rule ${refString(ref)} defined at ${locationText(rule.location)}`,
            m.package.location,
          ),
        );
      }
    }
  }
  return errors;
}
