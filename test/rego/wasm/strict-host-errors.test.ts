// Strict builtin errors of host builtins carry the call site as OPA's evaluator prints it (`<file>:<row>: `),
// like those of native builtins: a strict module records the call in progress in an exported global, and
// instantiatePolicy prefixes the message a throwing host builtin raised (OPA's topdown Error: location, code,
// message). Modules linked without strict errors export no such global and never abort on a host builtin.
import { describe, expect, it } from 'vitest';
import { compilePolicyWasm, hostBuiltins, instantiatePolicy } from '../../../src/rego/index.ts';
import { thrownMessage } from './thrown-message.ts';

const SOURCE = `package hosted

prefixed if {
	some s in input.names
	strings.any_prefix_match(s, input.prefixes)
}

parsed := to_number(input.text)

twice := [a, b] if {
	a := to_number(input.first)
	b := to_number(input.second)
}
`;

async function load(strict: boolean) {
  const { wasm } = await compilePolicyWasm({
    sources: [{ file: 'hosted.rego', text: SOURCE }],
    entrypoints: ['hosted/prefixed', 'hosted/parsed', 'hosted/twice'],
    strictBuiltinErrors: strict,
  });
  return instantiatePolicy(wasm, hostBuiltins({ strict }));
}

describe('strict host builtin errors name their call site', () => {
  it('a type error aborts with <file>:<row>: of the call, as OPA reports it', { timeout: 120_000 }, async () => {
    const policy = await load(true);
    expect(thrownMessage(() => policy.evaluate({ names: ['a/b'], prefixes: [1, 2] }, 'hosted/prefixed'))).toBe(
      'hosted.rego:5: eval_type_error: strings.any_prefix_match: operand 2 must be array of strings but got array containing number',
    );
    expect(thrownMessage(() => policy.evaluate({ text: 'abc' }, 'hosted/parsed'))).toMatch(
      /^hosted\.rego:8: eval_builtin_error: to_number: /,
    );
    // The same builtin at two rows: the failing call's row.
    expect(thrownMessage(() => policy.evaluate({ first: '1', second: 'x' }, 'hosted/twice'))).toMatch(
      /^hosted\.rego:12: eval_builtin_error: to_number: /,
    );
    expect(thrownMessage(() => policy.evaluate({ first: 'x', second: '1' }, 'hosted/twice'))).toMatch(
      /^hosted\.rego:11: eval_builtin_error: to_number: /,
    );
    // The instance stays usable and successful calls are unchanged.
    expect(policy.evaluate({ first: '1', second: '2' }, 'hosted/twice')).toEqual([{ result: [1, 2] }]);
    expect(policy.evaluate({ names: ['a/b'], prefixes: ['a/'] }, 'hosted/prefixed')).toEqual([{ result: true }]);
  });

  it('without strict errors the same calls are undefined', { timeout: 120_000 }, async () => {
    const policy = await load(false);
    expect(policy.evaluate({ names: ['a/b'], prefixes: [1, 2] }, 'hosted/prefixed')).toEqual([]);
    expect(policy.evaluate({ text: 'abc' }, 'hosted/parsed')).toEqual([]);
  });

  it('errors a custom builtin throws in its own words pass through unchanged', { timeout: 120_000 }, async () => {
    const { wasm } = await compilePolicyWasm({
      sources: [{ file: 'hosted.rego', text: SOURCE }],
      entrypoints: ['hosted/parsed'],
      strictBuiltinErrors: true,
    });
    const policy = await instantiatePolicy(wasm, {
      ...hostBuiltins({ strict: true }),
      to_number: () => {
        throw new Error('backend unavailable');
      },
    });
    // "1e0": the runtime reads plain decimals itself; an exponent goes to the host implementation.
    expect(thrownMessage(() => policy.evaluate({ text: '1e0' }, 'hosted/parsed'))).toBe('backend unavailable');
  });
});
