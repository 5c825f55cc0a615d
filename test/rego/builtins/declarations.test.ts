// The declaration table against OPA's own capabilities.json (the copy shipped in the
// @open-policy-agent/opa-wasm package), the capabilities document and the CLI command.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtinDecls, capabilitiesDocument, refusedBuiltins, type OpaType } from '../../../src/rego/builtins/index.ts';

const opaCaps = JSON.parse(
  readFileSync(new URL('../../../node_modules/@open-policy-agent/opa-wasm/capabilities.json', import.meta.url), 'utf8'),
) as {
  builtins: { name: string; decl: unknown; infix?: string; relation?: boolean; nondeterministic?: boolean }[];
};

/** Unions compare as sets (older OPA releases did not sort union members); drop doc-only fields. */
function canonical(t: unknown): unknown {
  if (Array.isArray(t)) return t.map(canonical);
  if (t === null || typeof t !== 'object') return t;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t)) {
    if (k === 'name' || k === 'description') continue;
    out[k] =
      k === 'of' && Array.isArray(v)
        ? v.map(canonical).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
        : canonical(v);
  }
  // `any` of a single `any` is just `any`.
  if (
    out.type === 'any' &&
    Array.isArray(out.of) &&
    out.of.length === 1 &&
    (out.of[0] as { type?: string }).type === 'any'
  )
    return { type: 'any' };
  return out;
}

// Builtins whose signature OPA widened after the release that package ships (glob.match accepts
// null delimiters).
const newerThanPackage = new Set(['glob.match']);
const deprecated = new Set(['all', 'any', 're_match', 'set_diff']);

describe('builtinDecls', () => {
  it("matches OPA's declarations for every builtin both know", () => {
    const compared: string[] = [];
    for (const b of opaCaps.builtins) {
      const ours = builtinDecls.get(b.name);
      // Deprecated builtins are declared for Rego v0 modules only.
      expect(ours?.deprecated === true, b.name).toBe(deprecated.has(b.name));
      if (deprecated.has(b.name)) expect(refusedBuiltins.has(b.name), b.name).toBe(false);
      expect(ours, b.name).toBeDefined();
      if (newerThanPackage.has(b.name)) continue;
      expect(canonical(ours!.decl), b.name).toEqual(canonical(b.decl));
      expect(ours!.infix, b.name).toEqual(b.infix);
      expect(ours!.relation, b.name).toEqual(b.relation);
      compared.push(b.name);
    }
    expect(compared.length).toBeGreaterThan(80);
  });

  it('covers every operator with its infix spelling', () => {
    const infix = Object.fromEntries([...builtinDecls.values()].filter((b) => b.infix).map((b) => [b.name, b.infix]));
    expect(infix).toEqual({
      equal: '==',
      neq: '!=',
      lt: '<',
      lte: '<=',
      gt: '>',
      gte: '>=',
      assign: ':=',
      eq: '=',
      plus: '+',
      minus: '-',
      mul: '*',
      div: '/',
      rem: '%',
      and: '&',
      or: '|',
      'internal.member_2': 'in',
      'internal.member_3': 'in',
    });
  });

  it('flags walk as a relation and the clock/random builtins as nondeterministic', () => {
    expect([...builtinDecls.values()].filter((b) => b.relation).map((b) => b.name)).toEqual(['walk']);
    const nondet = [...builtinDecls.values()]
      .filter((b) => b.nondeterministic)
      .map((b) => b.name)
      .sort();
    expect(nondet).toEqual(['io.jwt.decode_verify', 'rand.intn', 'time.now_ns', 'uuid.rfc4122']);
  });

  it('serialises decls with alphabetically ordered keys, like OPA', () => {
    const check = (t: unknown): void => {
      if (Array.isArray(t)) return t.forEach(check);
      if (t === null || typeof t !== 'object') return;
      const keys = Object.keys(t);
      expect(keys).toEqual([...keys].sort());
      Object.values(t).forEach(check);
    };
    for (const b of builtinDecls.values()) check(b.decl);
    expect(JSON.stringify(builtinDecls.get('json.marshal_with_options')!.decl.args![1])).toBe(
      '{"dynamic":{"key":{"type":"string"},"value":{"type":"any"}},"static":[{"key":"indent","value":{"type":"string"}},{"key":"prefix","value":{"type":"string"}},{"key":"pretty","value":{"type":"boolean"}}],"type":"object"}',
    );
    expect(builtinDecls.get('print')!.decl).toEqual({ type: 'function', variadic: { type: 'any' } });
    expect(builtinDecls.get('internal.print')!.decl.result).toBeUndefined();
  });

  it('never both declares and refuses a builtin; refusals name a reason', () => {
    for (const [name, reason] of refusedBuiltins) {
      expect(builtinDecls.has(name), name).toBe(false);
      expect(reason.length).toBeGreaterThan(10);
    }
    expect(refusedBuiltins.get('http.send')).toMatch(/network/);
    expect(refusedBuiltins.get('net.lookup_ip_addr')).toMatch(/DNS/);
    expect(refusedBuiltins.has('opa.runtime')).toBe(true);
    expect(refusedBuiltins.has('providers.aws.sign_req')).toBe(true);
  });

  it('every type in the table is well-formed OPA type JSON', () => {
    const valid = (t: OpaType): boolean => {
      switch (t.type) {
        case 'any':
          return !t.of || t.of.every(valid);
        case 'array':
          return (!t.dynamic || valid(t.dynamic)) && (!t.static || t.static.every(valid));
        case 'set':
          return valid(t.of);
        case 'object':
          return (
            (!t.dynamic || (valid(t.dynamic.key) && valid(t.dynamic.value))) &&
            (!t.static || t.static.every((f) => typeof f.key === 'string' && valid(f.value)))
          );
        default:
          return ['null', 'boolean', 'number', 'string'].includes(t.type);
      }
    };
    for (const b of builtinDecls.values()) {
      expect(b.decl.type).toBe('function');
      for (const a of b.decl.args ?? []) expect(valid(a), b.name).toBe(true);
      if (b.decl.result) expect(valid(b.decl.result), b.name).toBe(true);
    }
  });
});

describe('capabilities document', () => {
  it('lists every declared builtin sorted by name, Rego v1 features and ABI 1.3', () => {
    const doc = capabilitiesDocument();
    expect(doc.builtins.map((b) => b.name)).toEqual([...builtinDecls.keys()].sort());
    expect(doc.builtins.find((b) => b.name === 'plus')).toEqual({
      name: 'plus',
      decl: builtinDecls.get('plus')!.decl,
      infix: '+',
    });
    expect(doc.builtins.find((b) => b.name === 'time.now_ns')?.nondeterministic).toBe(true);
    expect(doc.features).toContain('rego_v1');
    expect(doc.wasm_abi_versions).toEqual([{ version: 1, minor_version: 3 }]);
  });

  it('`guardian policy capabilities` prints it as JSON', () => {
    const bin = new URL('../../../bin/guardian.mjs', import.meta.url).pathname;
    const out = execFileSync(process.execPath, [bin, 'policy', 'capabilities'], { encoding: 'utf8', timeout: 60_000 });
    expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(capabilitiesDocument())));
  });
});
