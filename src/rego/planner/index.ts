// Planner entry points: compiled Rego → OPA IR `Policy` in the exact shape of `opa build -t plan`.
import type { Body } from '../ast/types.ts';
import { compileQuery } from '../semantic/index.ts';
import type { CompiledProgram } from '../semantic/types.ts';
import { dataRef } from '../semantic/terms.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import type { Policy } from '../ir/types.ts';
import { FuncPlanner, PolicyBuilder, type PlanOptions } from './planner.ts';

export type { PlanOptions } from './planner.ts';

/** Wrap JS stack overflows on hostile input into a RegoError instead of crashing. */
function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof RangeError)
      throw new RegoErrors([new RegoError('rego_compile_error', 'policy too deeply nested to plan')]);
    throw e;
  }
}

/**
 * One plan per entrypoint (`"pkg/rule"` → query `data.pkg.rule`, bound to `result`), as
 * `opa build -t plan -e pkg/rule` does.
 */
export function planEntrypoints(program: CompiledProgram, entrypoints: string[], options: PlanOptions = {}): Policy {
  return guarded(() => {
    const pb = new PolicyBuilder(program, options);
    const plans = entrypoints.map((ep) => {
      const path = ep.split('/').filter((s) => s.length > 0);
      const fp = new FuncPlanner(pb, pb.base);
      return { name: ep, blocks: [fp.planEntrypoint(dataRef(path))] };
    });
    return pb.build(plans);
  });
}

/** One plan per query; each binds every non-generated, non-wildcard variable of its query. */
export function planQueries(
  program: CompiledProgram,
  queries: { name: string; body: Body; regoVersion?: 0 | 1 }[],
): Policy {
  return guarded(() => {
    const pb = new PolicyBuilder(program);
    const plans = queries.map((q) => {
      const compiled = compileQuery(program, q.body, { regoVersion: q.regoVersion ?? 1 });
      const fp = new FuncPlanner(pb, pb.base);
      return { name: q.name, blocks: [fp.planQuery(compiled.body, compiled.vars)] };
    });
    return pb.build(plans);
  });
}

export { PolicyBuilder, FuncPlanner } from './planner.ts';
