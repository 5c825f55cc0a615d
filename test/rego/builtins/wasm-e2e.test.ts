// Host builtins driven by real policies: Rego → our compiler → Wasm → opa-wasm calling
// createHostBuiltins() through opa_builtinN.
import { describe, expect, it } from 'vitest';
import { HostBuiltinContext } from '../../../src/rego/builtins/index.ts';
import { compileQuery, evaluateQuery, instantiatePolicy, hostBuiltins } from '../../../src/rego/index.ts';

const sources = (body: string) => [{ file: 'p.rego', text: `package p\n\n${body}\n` }];
const value = async (body: string, opts: { input?: unknown; ctx?: HostBuiltinContext; strict?: boolean } = {}) => {
  const rs = await evaluateQuery({
    sources: sources(body),
    query: 'data.p.x = v',
    input: opts.input,
    builtinContext: opts.ctx,
    strictBuiltinErrors: opts.strict,
  });
  return rs.length ? rs[0].v : undefined;
};

describe('host builtins through Wasm', () => {
  it('dispatches non-native builtins to the host and returns their JSON results', async () => {
    const q = await compileQuery({
      sources: sources(
        'x := [regex.match("^a+$", "aaa"), glob.match("*.com", ["."], "x.com"), strings.reverse("abc")]',
      ),
      query: 'data.p.x = v',
    });
    expect(q.plan.static?.builtin_funcs?.map((b) => b.name)).toEqual(['glob.match', 'regex.match', 'strings.reverse']);
    const policy = await instantiatePolicy(q.wasm, hostBuiltins());
    expect(policy.evaluate(undefined, q.entrypoint)).toEqual([{ v: [true, true, 'cba'] }]);
  });

  it('RE2 semantics inside a policy: regex.find_all_string_submatch_n and regex.replace', async () => {
    expect(await value('x := regex.find_all_string_submatch_n(`a(x*)b`, "-ab-axxb-", -1)')).toEqual([
      ['ab', ''],
      ['axxb', 'xx'],
    ]);
    expect(await value('x := regex.replace("foo", `(?P<w>o)`, "[${w}]")')).toBe('f[o][o]');
  });

  it('time.now_ns is one pinned value for the whole evaluation', async () => {
    const ctx = new HostBuiltinContext();
    ctx.beginEvaluation({ now: 1_700_000_000_000_000_000n });
    expect(await value('x := {time.now_ns() | numbers.range(1, 50)[_]}', { ctx })).toEqual([1_700_000_000_000_000_000]);
  });

  it('time builtins with zones and Go layouts', async () => {
    expect(
      await value(
        'x := time.format([time.parse_rfc3339_ns("2018-02-05T12:00:00Z"), "America/New_York", "Mon Jan 2 15:04 MST"])',
      ),
    ).toBe('Mon Feb 5 07:00 EST');
    expect(await value('x := time.weekday(time.parse_ns("2006-01-02", "2018-02-11"))')).toBe('Sunday');
  });

  it('uuid.rfc4122 repeats under the recorded seed (replay) and differs per key', async () => {
    const body = 'x := [uuid.rfc4122("a"), uuid.rfc4122("a"), uuid.rfc4122("b")]';
    const ctx = new HostBuiltinContext();
    ctx.beginEvaluation({ seed: 'request-7' });
    const first = (await value(body, { ctx })) as string[];
    expect(first[0]).toBe(first[1]);
    expect(first[2]).not.toBe(first[0]);
    ctx.beginEvaluation({ seed: 'request-7' });
    expect(await value(body, { ctx })).toEqual(first);
  });

  it("strict: a host builtin error aborts evaluation with OPA's message", async () => {
    const ctx = new HostBuiltinContext({ strict: true });
    await expect(value('x := upper(input.s)', { input: { s: 1 }, ctx, strict: true })).rejects.toThrow(
      'eval_type_error: upper: operand 1 must be string but got number',
    );
    await expect(
      value('x := semver.compare(input.v, "1.0.0")', { input: { v: 'one' }, ctx, strict: true }),
    ).rejects.toThrow('eval_builtin_error: semver.compare: operand 1: string one is not a valid SemVer');
  });

  it('non-strict: a host builtin error makes the expression undefined (default rule applies)', async () => {
    const errors: string[] = [];
    const ctx = new HostBuiltinContext({ onError: (name, e) => errors.push(`${name}: ${e.message}`) });
    expect(await value('default x := "fallback"\nx := strings.reverse(input.s)', { input: { s: 1 }, ctx })).toBe(
      'fallback',
    );
    expect(errors).toEqual(['strings.reverse: operand 1 must be string but got number']);
  });

  it("sprintf prints a set operand in Rego syntax, as OPA's Set.String (sorted, `set()` when empty)", async () => {
    expect(await value('x := sprintf("%v|%s|%v|%v", [{"zeta", "alpha"}, set(), [1, {2}], {"k": {true}}])')).toBe(
      '{"alpha", "zeta"}|set()|[1, {2}]|{"k": {true}}',
    );
    // json.marshal still writes a set as an array.
    expect(await value('x := json.marshal({"b", "a"})')).toBe('["a","b"]');
  });

  it('print writes set values in Rego syntax, one line per value combination', async () => {
    const lines: string[] = [];
    const ctx = new HostBuiltinContext({ print: (line) => lines.push(line) });
    await value('x if print("s:", {"b", "a"}, set(), input.missing)', { ctx });
    expect(lines).toEqual(['s: {"a", "b"} set() <undefined>']);
  });

  it('walk as a relation enumerates every path', async () => {
    expect(await value('x := [p | walk({"a": [1, {"b": true}]}, [p, _])]')).toEqual([
      [],
      ['a'],
      ['a', 0],
      ['a', 1],
      ['a', 1, 'b'],
    ]);
  });
});
