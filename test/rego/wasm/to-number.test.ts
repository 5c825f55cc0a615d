// to_number keeps a number as it is and reads a decimal string as the number written that way, as OPA's
// builtinToNumber does (topdown/casts.go returns the operand's ast.Number, or ast.Number(text)): the text
// survives into sprintf's `%.2f` (Go formats a non-integer ast.Number as float64, an integer as int) and
// into the result JSON. The runtime answers these natively; other strings and wrong types reach the host
// implementation through HOST_FALLBACK, with OPA's messages.
import { beforeAll, describe, expect, it } from 'vitest';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { builtinPolicy, evalRaw, thrown } from './ir-builder.ts';
import { linkPolicyWasm } from '../../../src/rego/wasm/index.ts';
import { countingHostBuiltins } from './counting-host.ts';
import { compilePolicyWasm } from '../../../src/rego/index.ts';

const hostCalls: string[] = [];
const counted = (strict: boolean) => countingHostBuiltins(strict, hostCalls);

let lax: LoadedPolicy;
let strict: LoadedPolicy;
beforeAll(async () => {
  const policy = builtinPolicy(['to_number'], 'num.rego');
  lax = await loadPolicy(await linkPolicyWasm(policy), { initial: 5 }, counted(false));
  strict = await loadPolicy(await linkPolicyWasm(policy, { strictBuiltinErrors: true }), { initial: 5 }, counted(true));
});

const call = (p: LoadedPolicy, argsText: string): string => evalRaw(p, argsText, p.entrypoints.to_number);
/** The message of a strict failure (the host's errors are Error objects). */
const failure = (fn: () => unknown): unknown => {
  const t = thrown(fn);
  return t instanceof Error ? t.message : t;
};

describe('to_number', () => {
  // [operands as Rego text, result JSON as dumped, answered natively]
  const cases: Array<[string, string, boolean]> = [
    ['[101.00]', '101.00', true],
    ['[1e3]', '1e3', true],
    ['[7]', '7', true],
    ['["101.00"]', '101.00', true],
    ['["-0.50"]', '-0.50', true],
    ['["-42"]', '-42', true],
    ['["12345678901234567890123"]', '12345678901234567890123', true],
    ['[true]', '1', true],
    ['[false]', '0', true],
    ['[null]', '0', true],
    ['["1e2"]', '100', false],
    ['["+5"]', '5', false],
    ['["007"]', '7', false],
    ['[".5"]', '0.5', false],
  ];
  it.each(cases)('to_number(%s) = %s', (args, want, native) => {
    for (const p of [lax, strict]) {
      hostCalls.length = 0;
      expect(call(p, args)).toBe(`[{"result":${want}}]`);
      expect(hostCalls.length, hostCalls.join(',')).toBe(native ? 0 : 1);
    }
  });

  it('strings that are no number and wrong types fail with OPA messages (undefined when not strict)', () => {
    expect(failure(() => call(strict, '["abc"]'))).toBe(
      'eval_builtin_error: to_number: strconv.ParseFloat: parsing "abc": invalid syntax',
    );
    expect(failure(() => call(strict, '["-Inf"]'))).toBe(
      'eval_type_error: to_number: operand 1 must be valid number string but got string',
    );
    expect(failure(() => call(strict, '[[1]]'))).toBe(
      'eval_type_error: to_number: operand 1 must be one of {null, boolean, number, string} but got array',
    );
    expect(call(lax, '["abc"]')).toBe('[]');
    expect(call(lax, '[{"a": 1}]')).toBe('[]');
  });

  it('a decimal keeps its text through to_number into sprintf, as in OPA', async () => {
    const { wasm } = await compilePolicyWasm({
      sources: [
        {
          file: 'cost.rego',
          text: `package cost
literal := sprintf("$%.2f", [to_number(101.00)])
text := sprintf("$%.2f", [to_number("101.00")])
integer := sprintf("$%.2f", [to_number("101")])
`,
        },
      ],
      entrypoints: ['cost/literal', 'cost/text', 'cost/integer'],
    });
    const p = await loadPolicy(wasm, { initial: 5 }, counted(false));
    expect(p.evaluate({}, 'cost/literal')).toEqual([{ result: '$101.00' }]);
    expect(p.evaluate({}, 'cost/text')).toEqual([{ result: '$101.00' }]);
    // an integer is a Go int to sprintf: %f of it is a formatting error in the output
    expect(p.evaluate({}, 'cost/integer')).toEqual([{ result: '$%!f(int=101)' }]);
  });
});
