// `rego.metadata.chain()` and `rego.metadata.rule()` resolved at compile time, as OPA's
// rewriteRegoMetadataCalls stage does: each call becomes the constant its rule's METADATA gives.
// rule() is the rule's closest rule-scope annotation ({} when none); chain() lists, from the rule
// outward, {path, annotations} for the rule (always present, annotations only when it has some),
// its document, its package, then every enclosing package's `subpackages` annotation, innermost
// first (OPA's AnnotationSet.Chain).
import type { Annotations, Body, Expr, Module, Rule, Term } from '../ast/types.ts';
import type { JsonValue as Json } from '../json.ts';
import { operatorName } from './terms.ts';

function packagePath(m: Module): string[] {
  return m.package.path.slice(1).map((t) => (t.type === 'string' ? t.value : ''));
}

/** The ground prefix of a rule head below `data`: `p.q[x]` in package a → [a, p, q]. */
function ruleGroundPath(m: Module, r: Rule): string[] {
  const ref = r.head.reference;
  const out = [...packagePath(m), (ref[0] as { value: string }).value];
  for (const t of ref.slice(1)) {
    if (t.type !== 'string') break;
    out.push(t.value);
  }
  return out;
}

/** An annotation as OPA's Annotations.toObject writes it (no location). */
export function annotationObject(a: Annotations): Record<string, Json> {
  const o: Record<string, Json> = { scope: a.scope };
  if (a.title) o.title = a.title;
  if (a.entrypoint) o.entrypoint = true;
  if (a.description) o.description = a.description;
  if (a.organizations?.length) o.organizations = a.organizations;
  if (a.related_resources?.length)
    o.related_resources = a.related_resources.map((r) => ({
      ref: r.ref,
      ...(r.description !== undefined ? { description: r.description } : {}),
    }));
  if (a.authors?.length)
    o.authors = a.authors.map((x) => ({
      ...(x.name !== undefined ? { name: x.name } : {}),
      ...(x.email !== undefined ? { email: x.email } : {}),
    }));
  if (a.custom && Object.keys(a.custom).length) o.custom = a.custom as { [k: string]: Json };
  return o;
}

function jsonTerm(v: Json, location: Term['location']): Term {
  if (v === null) return { type: 'null', location };
  if (typeof v === 'boolean') return { type: 'boolean', value: v, location };
  if (typeof v === 'number') return { type: 'number', value: String(v), location };
  if (typeof v === 'string') return { type: 'string', value: v, location };
  if (Array.isArray(v)) return { type: 'array', value: v.map((x) => jsonTerm(x, location)), location };
  return {
    type: 'object',
    value: Object.keys(v)
      .sort()
      .map((k): [Term, Term] => [{ type: 'string', value: k, location }, jsonTerm(v[k], location)]),
    location,
  };
}

/** Every module's annotations by scope, keyed by `/`-joined path. */
class AnnotationSet {
  private readonly documents = new Map<string, Annotations>();
  private readonly packages = new Map<string, Annotations>();
  private readonly subpackages = new Map<string, Annotations>();

  constructor(modules: readonly Module[]) {
    for (const m of modules) {
      const pkg = packagePath(m).join('/');
      for (const a of m.annotations) {
        const into = a.scope === 'subpackages' ? this.subpackages : this.packages;
        if (!into.has(pkg)) into.set(pkg, a);
      }
      for (const r of m.rules)
        for (const a of r.annotations ?? []) {
          const key = ruleGroundPath(m, r).join('/');
          if (a.scope === 'document' && !this.documents.has(key)) this.documents.set(key, a);
        }
    }
  }

  /** The closest rule-scope annotation of `r` (OPA's getPrimaryRuleAnnotations). */
  ruleScope(r: Rule): Annotations | undefined {
    const own = (r.annotations ?? []).filter((a) => a.scope === 'rule');
    return own[own.length - 1];
  }

  chain(m: Module, r: Rule): Json[] {
    const path = ruleGroundPath(m, r);
    const out: Json[] = [];
    const own = this.ruleScope(r);
    out.push(own ? { path, annotations: annotationObject(own) } : { path });
    const doc = this.documents.get(path.join('/'));
    if (doc) out.push({ path, annotations: annotationObject(doc) });
    const pkg = packagePath(m);
    const pkgAnn = this.packages.get(pkg.join('/'));
    if (pkgAnn) out.push({ path: pkg, annotations: annotationObject(pkgAnn) });
    for (let i = pkg.length; i >= 1; i--) {
      const sub = this.subpackages.get(pkg.slice(0, i).join('/'));
      if (sub) out.push({ path: pkg.slice(0, i), annotations: annotationObject(sub) });
    }
    return out;
  }
}

function metadataCall(name: string | undefined): 'chain' | 'rule' | undefined {
  if (name === 'rego.metadata.chain') return 'chain';
  if (name === 'rego.metadata.rule') return 'rule';
  return undefined;
}

/** Replace `rego.metadata.chain()` / `rego.metadata.rule()` in every rule by their constants (in place). */
export function resolveMetadataCalls(modules: readonly Module[]): void {
  let set: AnnotationSet | undefined;
  for (const m of modules) {
    for (const top of m.rules) {
      for (let r: Rule | undefined = top; r; r = r.else) {
        const rule = r;
        let chain: Json[] | undefined;
        let own: Json | undefined;
        const value = (kind: 'chain' | 'rule'): Json => {
          set ??= new AnnotationSet(modules);
          if (kind === 'chain') return (chain ??= set.chain(m, rule));
          if (own === undefined) {
            const a = set.ruleScope(rule);
            own = a ? annotationObject(a) : {};
          }
          return own;
        };
        const rewriteTerm = (t: Term): Term => {
          switch (t.type) {
            case 'call': {
              const kind = t.args.length === 0 ? metadataCall(operatorName(t.operator)) : undefined;
              if (kind) return jsonTerm(value(kind), t.location);
              t.args = t.args.map(rewriteTerm);
              return t;
            }
            case 'ref':
              t.value = t.value.map(rewriteTerm);
              return t;
            case 'array':
            case 'set':
              t.value = t.value.map(rewriteTerm);
              return t;
            case 'object':
              t.value = t.value.map(([k, v]) => [rewriteTerm(k), rewriteTerm(v)]);
              return t;
            case 'arraycomprehension':
            case 'setcomprehension':
              t.term = rewriteTerm(t.term);
              rewriteBody(t.body);
              return t;
            case 'objectcomprehension':
              t.key = rewriteTerm(t.key);
              t.value = rewriteTerm(t.value);
              rewriteBody(t.body);
              return t;
            default:
              return t;
          }
        };
        const rewriteExpr = (e: Expr): void => {
          const x = e.terms;
          switch (x.type) {
            case 'term':
              x.term = rewriteTerm(x.term);
              break;
            case 'call': {
              const kind = x.args.length <= 1 ? metadataCall(operatorName(x.operator)) : undefined;
              if (kind && x.args.length === 0) {
                e.terms = { type: 'term', term: jsonTerm(value(kind), e.location) };
              } else if (kind) {
                // `rego.metadata.rule(x)`: the output argument is unified with the value.
                const out = rewriteTerm(x.args[0]);
                e.terms = {
                  type: 'call',
                  operator: {
                    type: 'ref',
                    value: [{ type: 'var', value: 'eq', location: e.location }],
                    location: e.location,
                  },
                  args: [out, jsonTerm(value(kind), e.location)],
                };
              } else x.args = x.args.map(rewriteTerm);
              break;
            }
            case 'somein':
              if (x.key) x.key = rewriteTerm(x.key);
              x.value = rewriteTerm(x.value);
              x.domain = rewriteTerm(x.domain);
              break;
            case 'every':
              x.domain = rewriteTerm(x.domain);
              rewriteBody(x.body);
              break;
            default:
              break;
          }
          for (const w of e.with) w.value = rewriteTerm(w.value);
        };
        const rewriteBody = (b: Body): void => {
          for (const e of b) rewriteExpr(e);
        };
        rewriteBody(rule.body);
        const h = rule.head;
        if (h.value) h.value = rewriteTerm(h.value);
        if (h.key) h.key = rewriteTerm(h.key);
        h.reference = h.reference.map((t, i) => (i === 0 ? t : rewriteTerm(t)));
      }
    }
  }
}

/**
 * Entrypoints a METADATA `entrypoint: true` names (OPA: `opa build` adds them): a rule's ground path,
 * or a package's path when the annotation is on the package; `pkg/rule` form, in source order.
 */
export function annotatedEntrypoints(modules: readonly Module[]): string[] {
  const out: string[] = [];
  const add = (p: string[]): void => {
    const ep = p.join('/');
    if (!out.includes(ep)) out.push(ep);
  };
  for (const m of modules) {
    if (m.annotations.some((a) => a.entrypoint)) add(packagePath(m));
    for (const r of m.rules) if ((r.annotations ?? []).some((a) => a.entrypoint)) add(ruleGroundPath(m, r));
  }
  return out;
}
