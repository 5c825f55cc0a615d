// `f()` where f is a rule, not a function: OPA reads a head `f() = x` (v0) or `f() := x` as the rule
// `f = x`, and a call `f()` evaluates to the rule's value (OPA issues 6314, 6315). Real policy libraries
// use it for messages.
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const V0 = `package zero

limit_text() = out {
	not input.limit
	out = "unspecified"
}

limit_text() = out {
	out = input.limit
}

msg = m {
	m := sprintf("limit: %v", [limit_text()])
}

has_limit {
	limit_text()
}
`;

const V1 = `package one

import data.zero

names() := {"a", "b"}

size := count(names())

other := zero.limit_text()
`;

describe('zero-arity calls of rules', () => {
  it('evaluate to the rule value, in v0 and v1 modules and across packages', async () => {
    const built = await compileBundle({
      sources: [
        { file: 'zero.rego', text: V0, regoVersion: 0 },
        { file: 'one.rego', text: V1 },
      ],
      entrypoints: ['zero/msg', 'zero/has_limit', 'one/size', 'one/other'],
    });
    const loaded = await loadBundle(built.bundle);
    const ev = (ep: string, input?: unknown): unknown => {
      const rs = evaluateEntrypoint(loaded, ep, input) as { result: unknown }[];
      return rs.length ? rs[0].result : undefined;
    };
    expect(ev('zero/msg', {})).toBe('limit: unspecified');
    expect(ev('zero/msg', { limit: 3 })).toBe('limit: 3');
    expect(ev('zero/has_limit', {})).toBe(true);
    expect(ev('one/size')).toBe(2);
    expect(ev('one/other', { limit: 7 })).toBe(7);
  });
});
