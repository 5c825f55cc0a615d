// Runs Rego cases in the shape of OPA's YAML conformance cases (note, query, modules, data, input,
// want_result / want_error_code) through our pipeline to Wasm and evaluates them with the unmodified
// @open-policy-agent/opa-wasm, on both of its evaluation paths: the ABI 1.2 `opa_eval` fast path and the
// ctx-based slow path (opa_eval_ctx_new … eval). `npm run conformance` feeds it OPA's own corpus (which this
// repository does not carry); language-wasm.test.ts feeds it our own cases.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import {
  compileBundle,
  compileQuery,
  hostBuiltins,
  instantiatePolicy,
  type ResultSet,
} from '../../../src/rego/index.ts';
import { isOpaWasmRuntimeError, OPA_WASM_ERRORS, RegoErrors } from '../../../src/rego/errors.ts';
import { HostBuiltinContext } from '../../../src/rego/builtins/index.ts';

export const KNOWN_FAILURES_FILE = fileURLToPath(new URL('./known-failures.json', import.meta.url));

export interface ConformanceCase {
  note: string;
  query: string;
  modules?: string[];
  data?: Record<string, unknown>;
  input?: unknown;
  input_term?: string;
  want_result?: Record<string, unknown>[];
  want_error_code?: string;
  want_error?: string;
  strict_error?: boolean;
  sort_bindings?: boolean;
  /** Source YAML file, relative to the corpus directory (or the TS file of our own cases). */
  file: string;
}

export interface KnownFailure {
  note: string;
  reason: string;
}

export type Outcome =
  | { status: 'pass' }
  | { status: 'fail'; stage: 'parse' | 'compile' | 'eval' | 'compare' | 'paths-differ' | 'entrypoint'; detail: string };

function yamlFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yamlFiles(p, out);
    else if (name.endsWith('.yaml') || name.endsWith('.yml')) out.push(p);
  }
  return out;
}

/** Every case in the YAML files under `root` (OPA's corpus layout), in file order. */
export function loadCases(root: string): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const file of yamlFiles(root)) {
    const doc = parseYaml(readFileSync(file, 'utf8')) as { cases?: Omit<ConformanceCase, 'file'>[] };
    for (const c of doc.cases ?? []) cases.push({ ...c, file: relative(root, file) });
  }
  return cases;
}

export function loadKnownFailures(): KnownFailure[] {
  return JSON.parse(readFileSync(KNOWN_FAILURES_FILE, 'utf8')) as KnownFailure[];
}

/** The topic of a note: `aggregates/count` → `aggregates`. */
export function topicOf(note: string): string {
  return note.split('/')[0];
}

/** JSON with sorted object keys, for order-insensitive comparison of objects. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** `sort_bindings`: compare each binding's value as a set. */
function sortBindingValues(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row))
    out[k] = Array.isArray(v)
      ? [...v].sort((a, b) => (canonical(a) < canonical(b) ? -1 : canonical(a) > canonical(b) ? 1 : 0))
      : v;
  return out;
}

/** A result set as a sorted list of canonical rows: row order carries no meaning in OPA. */
function normaliseResultSet(rs: Record<string, unknown>[], sortBindings: boolean): string[] {
  return rs.map((r) => canonical(sortBindings ? sortBindingValues(r) : r)).sort();
}

function errorText(e: unknown): { codes: string[]; message: string } {
  if (e instanceof RegoErrors)
    return { codes: e.errors.map((x) => x.code), message: e.errors.map((x) => x.format()).join('\n') };
  const message = e instanceof Error ? e.message : String(e);
  const codes = [...message.matchAll(/\b((?:rego|eval)_[a-z_]+_error)\b/g)].map((m) => m[1]);
  return { codes, message };
}

/**
 * OPA's cases are written against its Go evaluator (topdown); a module from OPA's Wasm backend reports the
 * same conflicts with its own run-time error texts, `<file>:<row>:<col>: <message>` (internal/compiler/wasm
 * errorMessages), which compiled modules reproduce. OPA's Wasm e2e runner skips error cases altogether.
 */
const WASM_EQUIVALENTS: readonly { topdown: string; wasm: string }[] = [
  { topdown: 'complete rules must not produce multiple outputs', wasm: OPA_WASM_ERRORS.varAssignConflict },
  { topdown: 'functions must not produce multiple outputs for same inputs', wasm: OPA_WASM_ERRORS.varAssignConflict },
  { topdown: 'object keys must be unique', wasm: OPA_WASM_ERRORS.objectInsertConflict },
];

function wasmEquivalent(c: ConformanceCase, message: string): boolean {
  return (
    c.want_error_code === 'eval_conflict_error' &&
    isOpaWasmRuntimeError(message) &&
    WASM_EQUIVALENTS.some(
      (q) => (c.want_error === undefined || c.want_error === q.topdown) && message.endsWith(`: ${q.wasm}`),
    )
  );
}

function checkWantedError(c: ConformanceCase, e: unknown, stage: 'compile' | 'eval'): Outcome {
  const { codes, message } = errorText(e);
  if (c.want_error_code === undefined && c.want_error === undefined) {
    return { status: 'fail', stage, detail: message.slice(0, 2000) };
  }
  if (wasmEquivalent(c, message)) return { status: 'pass' };
  if (c.want_error_code !== undefined && !codes.includes(c.want_error_code)) {
    return {
      status: 'fail',
      stage: 'compare',
      detail: `want error code ${c.want_error_code}, got: ${message.slice(0, 1000)}`,
    };
  }
  // OPA's runner checks the message by substring; texts may differ between OPA versions, the code must not.
  if (c.want_error !== undefined && !message.includes(c.want_error)) {
    return {
      status: 'fail',
      stage: 'compare',
      detail: `want error containing ${JSON.stringify(c.want_error)}, got: ${message.slice(0, 1000)}`,
    };
  }
  return { status: 'pass' };
}

async function evaluateOn(
  path: 'fast' | 'slow',
  wasm: Uint8Array,
  c: ConformanceCase,
  entrypoint: string,
): Promise<ResultSet> {
  const ctx = new HostBuiltinContext({ strict: c.strict_error === true, print: () => {} });
  const policy: LoadedPolicy = await instantiatePolicy(wasm, hostBuiltins(ctx));
  policy.setData(c.data ?? {});
  // opa-wasm picks its path by ABI minor version: <2 forces the ctx-based path.
  if (path === 'slow') policy.minorVersion = 1;
  return policy.evaluate(c.input_term !== undefined ? undefined : c.input, entrypoint) as ResultSet;
}

export interface RunOptions {
  /** Evaluate on both opa-wasm paths and require identical results (default true). */
  bothPaths?: boolean;
  /**
   * For queries of the form `data.a.b = x`, also build the entrypoint `a/b` the way production bundles
   * are built (planEntrypoints, result bound to `result`) and require the same answer (default true).
   */
  entrypointPath?: boolean;
}

/** `data.a.b.c = x` → `a/b/c` (the entrypoint form `opa build -e` uses), else undefined. */
export function entrypointOf(query: string): string | undefined {
  const m = /^data\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*=\s*x$/.exec(query.trim());
  return m ? m[1].replace(/\./g, '/') : undefined;
}

/** The entrypoint build of a `data.a.b = x` case, as a result set over `x`. */
async function runViaEntrypoint(
  c: ConformanceCase,
  entrypoint: string,
): Promise<{ ok: true; rs: ResultSet } | { ok: false; error: unknown }> {
  try {
    const built = await compileBundle({
      sources: (c.modules ?? []).map((text, i) => ({ file: `test-${i}.rego`, text })),
      entrypoints: [entrypoint],
      strictBuiltinErrors: c.strict_error === true,
    });
    const rs = await evaluateOn('fast', built.wasm, c, entrypoint);
    return { ok: true, rs: rs.map((row) => ({ x: row.result })) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Compile and evaluate one case; never throws. */
export async function runCase(
  c: ConformanceCase,
  options: RunOptions = {},
): Promise<Outcome & { results?: ResultSet }> {
  let compiled: Awaited<ReturnType<typeof compileQuery>>;
  try {
    compiled = await compileQuery({
      sources: (c.modules ?? []).map((text, i) => ({ file: `test-${i}.rego`, text })),
      query: c.query,
      ...(c.input_term !== undefined ? { inputTerm: c.input_term } : {}),
      strictBuiltinErrors: c.strict_error === true,
    });
  } catch (e) {
    if (
      e instanceof RegoErrors &&
      e.errors.some((x) => x.code === 'rego_parse_error') &&
      !c.want_error_code?.startsWith('rego_parse')
    ) {
      return { status: 'fail', stage: 'parse', detail: e.message.slice(0, 2000) };
    }
    return checkWantedError(c, e, 'compile');
  }

  let fast: ResultSet;
  try {
    fast = await evaluateOn('fast', compiled.wasm, c, compiled.entrypoint);
  } catch (e) {
    const outcome = checkWantedError(c, e, 'eval');
    if (outcome.status !== 'pass') return outcome;
    if (options.bothPaths !== false) {
      // The slow path must fail the same way.
      try {
        await evaluateOn('slow', compiled.wasm, c, compiled.entrypoint);
        return { status: 'fail', stage: 'paths-differ', detail: 'fast path raised an error, slow path did not' };
      } catch (e2) {
        const slowOutcome = checkWantedError(c, e2, 'eval');
        if (slowOutcome.status !== 'pass') return slowOutcome;
      }
    }
    // The production build (entrypoint) must raise the wanted error as well.
    const ep = options.entrypointPath !== false && c.input_term === undefined ? entrypointOf(c.query) : undefined;
    if (ep) {
      const viaEp = await runViaEntrypoint(c, ep);
      if (viaEp.ok)
        return {
          status: 'fail',
          stage: 'entrypoint',
          detail: `entrypoint ${ep} returned ${canonical(viaEp.rs).slice(0, 500)} instead of the wanted error`,
        };
      const epOutcome = checkWantedError(c, viaEp.error, 'eval');
      if (epOutcome.status !== 'pass')
        return { status: 'fail', stage: 'entrypoint', detail: `entrypoint ${ep}: ${epOutcome.detail}` };
    }
    return outcome;
  }
  if (options.bothPaths !== false) {
    let slow: ResultSet;
    try {
      slow = await evaluateOn('slow', compiled.wasm, c, compiled.entrypoint);
    } catch (e) {
      return {
        status: 'fail',
        stage: 'paths-differ',
        detail: `slow path failed: ${errorText(e).message.slice(0, 1000)}`,
      };
    }
    if (canonical(fast) !== canonical(slow)) {
      return {
        status: 'fail',
        stage: 'paths-differ',
        detail: `fast ${canonical(fast).slice(0, 500)} vs slow ${canonical(slow).slice(0, 500)}`,
      };
    }
  }
  if (c.want_error_code !== undefined || c.want_error !== undefined) {
    return {
      status: 'fail',
      stage: 'compare',
      detail: `want error ${c.want_error_code ?? ''} ${c.want_error ?? ''}, got result ${canonical(fast).slice(0, 1000)}`,
      results: fast,
    };
  }
  const want = normaliseResultSet(c.want_result ?? [], c.sort_bindings === true);
  const got = normaliseResultSet(fast, c.sort_bindings === true);
  if (canonical(want) !== canonical(got)) {
    return {
      status: 'fail',
      stage: 'compare',
      detail: `want ${want.join(' ').slice(0, 1000)}\n got ${got.join(' ').slice(0, 1000)}`,
      results: fast,
    };
  }
  const ep = options.entrypointPath !== false && c.input_term === undefined ? entrypointOf(c.query) : undefined;
  if (ep) {
    const viaEp = await runViaEntrypoint(c, ep);
    if (!viaEp.ok)
      return {
        status: 'fail',
        stage: 'entrypoint',
        detail: `entrypoint ${ep} failed: ${errorText(viaEp.error).message.slice(0, 1000)}`,
      };
    const gotEp = normaliseResultSet(viaEp.rs, c.sort_bindings === true);
    if (canonical(want) !== canonical(gotEp)) {
      return {
        status: 'fail',
        stage: 'entrypoint',
        detail: `entrypoint ${ep}: want ${want.join(' ').slice(0, 1000)}\n got ${gotEp.join(' ').slice(0, 1000)}`,
      };
    }
  }
  return { status: 'pass', results: fast };
}
