import { describe, expect, it } from 'vitest';
import {
  BUILTIN_ERROR_MARKER,
  builtinDecls,
  createHostBuiltins,
  hostImplementations,
} from '../../../src/rego/builtins/index.ts';
import { allCaseTables, type Case } from './cases.ts';
import { call } from './call.ts';

const label = (c: Case) => {
  const args = JSON.stringify(c.args, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? '';
  return `${c.name}(${args.slice(1, -1).slice(0, 90)})${c.note ? ` — ${c.note}` : ''}`;
};

for (const [table, cases] of Object.entries(allCaseTables)) {
  describe(`host builtins: ${table}`, () => {
    for (const c of cases) {
      if ('want' in c) {
        it(label(c), () => {
          expect(call(c.name, ...c.args)).toEqual(c.want);
        });
      } else {
        it(`${label(c)} fails`, () => {
          expect(() => call(c.name, ...c.args)).toThrow(c.error);
        });
      }
    }
  });
}

describe('host builtin coverage', () => {
  const all = Object.values(allCaseTables).flat();
  // Builtins exercised in their own test files (need keys, certificates, clocks or seeds).
  const testedElsewhere = new Set([
    'time.now_ns',
    'uuid.rfc4122',
    'crypto.x509.parse_certificates',
    'io.jwt.decode',
    'io.jwt.decode_verify',
    ...Object.keys(hostImplementations).filter((n) => n.startsWith('io.jwt.verify_')),
  ]);

  it('every declared builtin except the unification operators and planner-lowered ones has a host implementation', () => {
    const missing = [...builtinDecls.keys()].filter((n) => !hostImplementations[n]);
    // The planner lowers net.cidr_contains_matches to internal.cidr_contains_matches (tested in cases.ts).
    expect(missing.sort()).toEqual(['assign', 'eq', 'net.cidr_contains_matches']);
  });

  it('every host builtin has at least one success case here or a dedicated test', () => {
    const withSuccess = new Set(all.filter((c) => 'want' in c).map((c) => c.name));
    const untested = Object.keys(hostImplementations).filter((n) => !withSuccess.has(n) && !testedElsewhere.has(n));
    expect(untested).toEqual([]);
  });

  it('every host builtin with a typed operand has an error case', () => {
    const withError = new Set(all.filter((c) => 'error' in c).map((c) => c.name));
    const typed = Object.keys(hostImplementations).filter((n) => {
      const args = builtinDecls.get(n)?.decl.args ?? [];
      return args.some((a) => a.type !== 'any');
    });
    // Validity tests answer false instead of failing; print never fails.
    const neverFail = new Set([
      'is_set',
      'regex.is_valid',
      'base64.is_valid',
      'json.is_valid',
      'yaml.is_valid',
      'net.cidr_is_valid',
      'internal.print',
    ]);
    const missing = typed.filter((n) => !withError.has(n) && !neverFail.has(n));
    expect(missing).toEqual([]);
  });
});

describe('strict and non-strict builtin errors', () => {
  it('non-strict: a failing builtin is undefined and reported to onError', () => {
    const seen: string[] = [];
    const fns = createHostBuiltins({
      strict: false,
      onError: (name, e) => seen.push(`${name}: ${e.code}: ${e.message}`),
    });
    expect(fns.div(1, 0)).toBeUndefined();
    expect(fns['object.keys']('x')).toBeUndefined();
    expect(seen).toEqual([
      'div: eval_builtin_error: divide by zero',
      'object.keys: eval_type_error: operand 1 must be object but got string',
    ]);
  });

  it("strict: the error message is OPA's `<code>: <builtin>: <message>`", () => {
    const fns = createHostBuiltins({ strict: true });
    expect(() => fns.div(1, 0)).toThrow(new Error('eval_builtin_error: div: divide by zero'));
    expect(() => fns.upper(1)).toThrow(new Error('eval_type_error: upper: operand 1 must be string but got number'));
  });

  it("strictErrors 'marker': the error comes back as a marker object for the module to abort with its location", () => {
    const fns = createHostBuiltins({ strict: true, strictErrors: 'marker' });
    expect(fns.upper(1)).toEqual({
      [BUILTIN_ERROR_MARKER]: 'eval_type_error: upper: operand 1 must be string but got number',
    });
    expect(fns.upper('a')).toBe('A');
  });

  it('unexpected exceptions inside an implementation are builtin errors too (fail closed, no crash)', () => {
    const fns = createHostBuiltins({ strict: false });
    // A cyclic alias bomb in YAML is refused by the parser rather than crashing the evaluation.
    const bomb =
      'a: &a [1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]';
    expect(fns['yaml.unmarshal'](bomb)).toBeUndefined();
  });
});
