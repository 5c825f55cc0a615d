// Our language cases (../conformance/language-cases.ts) of the planner's target topics, each run through
// parse → compile → plan → IR evaluation (ir-eval.ts).
import type { ConformanceCase } from '../conformance/runner.ts';
import { LANGUAGE_CASES } from '../conformance/language-cases.ts';
import { parseModule, parseQuery } from '../../../src/rego/ast/index.ts';
import { compileModules } from '../../../src/rego/semantic/index.ts';
import { planQueries } from '../../../src/rego/planner/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';
import { evalPlan, EvalError, key, fromJSON, toJSON, type RObj, type V } from './ir-eval.ts';

export const TOPICS = [
  'aggregates',
  'arithmetic',
  'assignments',
  'comparisonexpr',
  'completedoc',
  'comprehensions',
  'defaultkeyword',
  'elsekeyword',
  'every',
  'functions',
  'indexing',
  'negation',
  'objectget',
  'partialobjectdoc',
  'partialsetdoc',
  'refheads',
  'sets',
  'eqexpr',
  'virtualdocs',
  'withkeyword',
  'baseandvirtualdocs',
];

export type Case = ConformanceCase;

/** The cases of the planner's target topics (a note's topic is its first segment). */
export function loadCases(): Case[] {
  return LANGUAGE_CASES.filter((c) => TOPICS.includes(c.note.split('/')[0]));
}

function termValue(text: string): V {
  const body = parseQuery(`__x__ = ${text}`);
  const prog = compileModules([]);
  const policy = planQueries(prog, [{ name: 'q', body }]);
  const [res] = evalPlan(policy, 'q', undefined, {}, { raw: true }) as RObj[];
  return res.get('__x__')!;
}

/** An `input_term` (Rego term text) as the JSON opa-wasm accepts (sets become arrays). */
export function inputTermJSON(text: string): unknown {
  return toJSON(termValue(text));
}

export type Outcome = { ok: true } | { ok: false; detail: string };

function canonical(v: unknown, sort: boolean): string {
  const x = fromJSON(v);
  if (sort && Array.isArray(x)) return key([...x].sort((a, b) => (key(a) < key(b) ? -1 : 1)));
  return key(x);
}

export function runCase(c: Case): Outcome {
  let results: Record<string, unknown>[];
  try {
    // Named as the Wasm runner names them, so error locations compare equal.
    const modules = (c.modules ?? []).map((src, i) => parseModule(`test-${i}.rego`, src));
    const prog = compileModules(modules);
    const body = parseQuery(c.query);
    const policy = planQueries(prog, [{ name: 'q', body }]);
    const input = c.input_term !== undefined ? termValue(c.input_term) : c.input;
    results = evalPlan(policy, 'q', input, c.data ?? {}, { inputIsValue: c.input_term !== undefined }) as Record<
      string,
      unknown
    >[];
  } catch (e) {
    if ((c.want_error_code || c.want_error) && !c.strict_error) {
      const msg = e instanceof RegoErrors || e instanceof EvalError ? e.message : String(e);
      const matches = c.want_error_code
        ? msg.includes(c.want_error_code) || (c.want_error !== undefined && msg.includes(c.want_error))
        : msg.includes(c.want_error!);
      if (matches) return { ok: true };
      return { ok: false, detail: `wrong error: ${msg}` };
    }
    return { ok: false, detail: `threw: ${e instanceof Error ? e.message : String(e)}` };
  }
  if ((c.want_error_code || c.want_error) && !c.strict_error)
    return {
      ok: false,
      detail: `expected error ${c.want_error_code ?? c.want_error}, got ${JSON.stringify(results)}`,
    };
  const want = c.want_result ?? [];
  const got = results.map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, canonical(v, !!c.sort_bindings)])),
  );
  const exp = want.map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, canonical(v, !!c.sort_bindings)])),
  );
  const norm = (xs: Record<string, string>[]): string =>
    JSON.stringify(xs.map((x) => JSON.stringify(Object.entries(x).sort())).sort());
  if (norm(got) === norm(exp)) return { ok: true };
  return { ok: false, detail: `got ${JSON.stringify(results)}\nwant ${JSON.stringify(want)}` };
}
