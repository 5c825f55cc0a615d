// Small helpers for writing OPA-format IR plans by hand in tests (shape: src/rego/ir/types.ts).
import { createRequire } from 'node:module';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { Block, BuiltinFunc, Func, Operand, Policy, Stmt } from '../../../src/rego/ir/types.ts';
import { linkPolicyWasm, NATIVE_BUILTINS, type LinkOptions } from '../../../src/rego/wasm/index.ts';

// tsconfig has no DOM lib: describe the parts of the WebAssembly JS API the tests touch.
export interface WasmMemoryDescriptor {
  initial: number;
  maximum?: number;
}
interface WasmDescriptor {
  module?: string;
  name: string;
  kind: string;
}
interface WasmApi {
  Module: {
    new (bytes: Uint8Array): object;
    exports(m: object): WasmDescriptor[];
    imports(m: object): WasmDescriptor[];
  };
}
export const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The instance's exports (opa-wasm types them loosely). */
export function exportsOf(p: LoadedPolicy): Record<string, any> {
  return (p.wasmInstance as unknown as { exports: Record<string, any> }).exports;
}

/** Reads the NUL-terminated UTF-8 string at addr in the policy's memory. */
export function readCString(p: LoadedPolicy, addr: number): string {
  const bytes = new Uint8Array((p.mem as unknown as { buffer: ArrayBuffer }).buffer, addr);
  return new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));
}

/** Writes bytes into fresh module memory (opa_malloc) and returns the address. */
export function writeBytes(p: LoadedPolicy, bytes: Uint8Array): number {
  const ex = exportsOf(p);
  const addr = ex.opa_malloc(bytes.length) as number;
  new Uint8Array((p.mem as unknown as { buffer: ArrayBuffer }).buffer).set(bytes, addr);
  return addr;
}

// loadPolicySync is only reachable through the CommonJS entry / default export.
export const loadPolicySync = (
  createRequire(import.meta.url)('@open-policy-agent/opa-wasm') as {
    loadPolicySync: (wasm: Uint8Array, memory?: WasmMemoryDescriptor, builtins?: object) => LoadedPolicy;
  }
).loadPolicySync;

export const local = (value: number): Operand => ({ type: 'local', value });
export const bool = (value: boolean): Operand => ({ type: 'bool', value });

export function stmt<T extends Stmt['type']>(type: T, fields: Extract<Stmt, { type: T }>['stmt']): Stmt {
  return { type, stmt: fields } as Stmt;
}

export class PolicyBuilder {
  private readonly strings: string[] = ['result'];
  private readonly files: string[] = [];
  private readonly builtins: BuiltinFunc[] = [];
  private readonly plans: { name: string; blocks: Block[] }[] = [];
  private readonly funcs: Func[] = [];

  /** string_index operand for s (interned). */
  str(s: string): Operand {
    return { type: 'string_index', value: this.strIndex(s) };
  }

  strIndex(s: string): number {
    let i = this.strings.indexOf(s);
    if (i < 0) i = this.strings.push(s) - 1;
    return i;
  }

  file(name: string): number {
    let i = this.files.indexOf(name);
    if (i < 0) i = this.files.push(name) - 1;
    return i;
  }

  builtin(name: string, args: number, result: boolean | 'set' = true): this {
    const decl: BuiltinFunc['decl'] = { type: 'function', args: Array(args).fill({ type: 'any' }) };
    if (result) decl.result = result === 'set' ? { type: 'set', of: { type: 'any' } } : { type: 'any' };
    this.builtins.push({ name, decl });
    this.builtins.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this;
  }

  func(f: Func): this {
    this.funcs.push(f);
    return this;
  }

  /** A rule func `g0.data.<path>` with params (input, data), return local 2. */
  rule(path: string, blocks: Block[]): this {
    const segs = path.split('.');
    return this.func({ name: `g0.data.${path}`, params: [0, 1], return: 2, path: ['g0', ...segs], blocks });
  }

  /** Entrypoint plan `name` binding `result` to the value of rule func `g0.data.<rulePath>`. */
  entrypoint(name: string, rulePath: string): this {
    this.plans.push({
      name,
      blocks: [
        {
          stmts: [
            stmt('CallStmt', { func: `g0.data.${rulePath}`, args: [local(0), local(1)], result: 2 }),
            stmt('MakeObjectStmt', { target: 3 }),
            stmt('ObjectInsertStmt', { key: this.str('result'), value: local(2), object: 3 }),
            stmt('ResultSetAddStmt', { value: 3 }),
          ],
        },
      ],
    });
    return this;
  }

  plan(name: string, blocks: Block[]): this {
    this.plans.push({ name, blocks });
    return this;
  }

  build(): Policy {
    return {
      static: {
        strings: this.strings.map((value) => ({ value })),
        builtin_funcs: this.builtins,
        files: this.files.map((value) => ({ value })),
      },
      plans: { plans: this.plans },
      funcs: { funcs: this.funcs },
    };
  }
}

/** Block that returns local 2 (every func ends with one). */
export const returnBlock = (src = 2): Block => ({ stmts: [stmt('ReturnLocalStmt', { source: src })] });

/**
 * One entrypoint per native builtin, named after it: result := f(input[0], ..., input[n-1]), the call located
 * at `file`:3:5 when a file is given (so error texts carry a location).
 */
export function builtinPolicy(names: readonly string[], file?: string): Policy {
  const b = new PolicyBuilder();
  const f = file ? b.file(file) : undefined;
  for (const name of [...names].sort()) b.builtin(name, NATIVE_BUILTINS.get(name)?.arity ?? 1);
  for (const name of names) {
    const arity = NATIVE_BUILTINS.get(name)!.arity;
    const path = `b.${name.replace(/\./g, '_')}`;
    const stmts = [];
    const args = [];
    for (let i = 0; i < arity; i++) {
      stmts.push(stmt('MakeNumberIntStmt', { value: i, target: 10 + i }));
      stmts.push(stmt('DotStmt', { source: local(0), key: local(10 + i), target: 20 + i }));
      args.push(local(20 + i));
    }
    stmts.push(stmt('CallStmt', { func: name, args, result: 3, file: f, row: 3, col: 5 }));
    stmts.push(stmt('AssignVarOnceStmt', { source: local(3), target: 2 }));
    b.rule(path, [{ stmts }, returnBlock()]);
    b.entrypoint(name, path);
  }
  return b.build();
}

export interface BothPaths {
  fast: LoadedPolicy;
  slow: LoadedPolicy;
  wasm: Uint8Array;
}

/**
 * Loads the module twice: as-is (ABI 1.3 → opa_eval fast path) and with `minorVersion` forced to 1 so the
 * npm host drives the ctx-based slow path.
 */
export async function loadBoth(
  policy: Policy,
  options: LinkOptions = {},
  customBuiltins: Record<string, (...args: any[]) => unknown> = {},
  memory: WasmMemoryDescriptor = { initial: 5 },
): Promise<BothPaths> {
  const wasm = await linkPolicyWasm(policy, options);
  const fast = await loadPolicy(wasm, { ...memory }, customBuiltins);
  const slow = await loadPolicy(wasm, { ...memory }, customBuiltins);
  (slow as unknown as { minorVersion: number }).minorVersion = 1;
  return { fast, slow, wasm };
}

/** Evaluates on both paths, asserting identical results; returns the result set. */
export function evalBoth(p: BothPaths, input?: unknown, entrypoint?: string | number): unknown {
  const a = p.fast.evaluate(input, entrypoint);
  const b = p.slow.evaluate(input, entrypoint);
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja !== jb) throw new Error(`fast and slow paths differ: ${ja} vs ${jb}`);
  return a;
}

/** Runs fn and returns what it threw (opa-wasm throws abort messages as strings). */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/**
 * Evaluates entrypoint `ep` through the module's exports like the host's slow path, but parses the input
 * with opa_value_parse (Rego syntax allowed) and returns the raw JSON text of the result set, so exact
 * number text and set results can be asserted.
 */
export function evalRaw(p: LoadedPolicy, inputText: string, ep = 0): string {
  const ex = exportsOf(p);
  ex.opa_heap_ptr_set(p.dataHeapPtr);
  const bytes = new TextEncoder().encode(inputText);
  const addr = writeBytes(p, bytes);
  const input = ex.opa_value_parse(addr, bytes.length) as number;
  if (input === 0) throw new Error(`input does not parse: ${inputText}`);
  const ctx = ex.opa_eval_ctx_new();
  ex.opa_eval_ctx_set_input(ctx, input);
  ex.opa_eval_ctx_set_data(ctx, p.dataAddr);
  ex.opa_eval_ctx_set_entrypoint(ctx, ep);
  ex.eval(ctx);
  return readCString(p, ex.opa_json_dump(ex.opa_eval_ctx_get_result(ctx)));
}

/** Parses text with opa_json_parse (or opa_value_parse) and dumps it again; null if it does not parse. */
export function roundTrip(
  p: LoadedPolicy,
  text: string,
  mode: 'json' | 'value' = 'json',
  dump: 'json' | 'value' = 'json',
): string | null {
  const ex = exportsOf(p);
  ex.opa_heap_ptr_set(p.dataHeapPtr);
  const bytes = new TextEncoder().encode(text);
  const addr = writeBytes(p, bytes);
  const v = (
    mode === 'json' ? ex.opa_json_parse(addr, bytes.length) : ex.opa_value_parse(addr, bytes.length)
  ) as number;
  if (v === 0) return null;
  return readCString(p, dump === 'json' ? ex.opa_json_dump(v) : ex.opa_value_dump(v));
}
