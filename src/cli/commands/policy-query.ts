// `guardian policy eval 'QUERY' -d dir -i input.json`: like `opa eval`. The query is compiled with the modules
// the -d/-b paths hold (OPA's loader rules) and evaluated through opa-wasm; the output is opa eval's JSON
// `{"result":[{"expressions":[{"value","text","location"}],"bindings":{…}}]}` (`{}` when undefined).
// Each expression's value is captured as OPA's rego package does (rewriteToCaptureValue): a term or a call
// `e` becomes `__exprN__ = (e)`; with more than one expression or with variables, a result also needs every
// captured value to be other than false. Assignments, unifications, `some` and `not` expressions are `true`.
import type { Body, Expr, RefTerm } from '../../rego/ast/types.ts';
import { RegoErrors } from '../../rego/errors.ts';
import { wasmJson } from '../../rego/json.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { EVAL_FORMATS, type EvalFormat, type EvalResult, formatEvalOutput } from './eval-output.ts';
import { evaluateExact } from './exact-result.ts';
import { gatherInputs, readDataFile } from './policy-inputs.ts';
import {
  dispatchedBuiltins,
  importCustomBuiltins,
  readCapabilitiesFile,
  requireImplementations,
} from './policy-capabilities.ts';

export interface QueryOptions {
  data: string[];
  bundle?: string;
  input?: string;
  ignore: string[];
  strictBuiltinErrors?: boolean;
  v0Compatible?: boolean;
  /** `--fail`: exit 1 when the query is undefined. */
  fail?: boolean;
  /** `--fail-defined`: exit 1 when the query is defined. */
  failDefined?: boolean;
  /** `-I`: read the input from stdin (the command turns it into `input: '-'`). */
  stdinInput?: boolean;
  /** `-f`: opa eval's output format. */
  format: string;
  /** `--capabilities FILE`: the builtins the modules and the query may call, custom ones declared. */
  capabilities?: string;
  /** `--builtins module.mjs`: the custom builtins' JavaScript implementations. */
  builtins?: string;
}

interface CapturedExpr {
  text: string;
  location: { row: number; col: number };
  /** The variable holding its value; undefined when the value is `true` by construction. */
  capture?: string;
}

const captureVar = (i: number): string => `__expr${i}__`;

/** The source text of an expression without its `with` modifiers. */
function coreText(expr: Expr, full: string): string {
  const start = expr.location?.offset ?? 0;
  const firstWith = expr.with[0]?.location?.offset;
  return firstWith !== undefined ? full.slice(0, firstWith - start).trimEnd() : full;
}

function operatorName(op: RefTerm): string {
  const head = op.value[0];
  return op.value.length === 1 && head.type === 'var' ? head.value : '';
}

/** Whether a node names a variable other than `data`/`input` outside operator position (OPA: iteration). */
function hasQueryVars(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasQueryVars);
  if (node === null || typeof node !== 'object') return false;
  const o = node as Record<string, unknown>;
  if (o.type === 'var' && typeof o.value === 'string') return o.value !== 'data' && o.value !== 'input';
  return Object.entries(o).some(([k, v]) => k !== 'operator' && k !== 'location' && hasQueryVars(v));
}

function rewriteForCapture(body: Body): { query: string; exprs: CapturedExpr[] } {
  const parts: string[] = [];
  const exprs: CapturedExpr[] = [];
  const checkCapture = body.length > 1 || body.some((e) => hasQueryVars(e.terms));
  body.forEach((expr, i) => {
    const text = expr.location?.text ?? '';
    const location = { row: expr.location?.row ?? 1, col: expr.location?.col ?? 1 };
    const t = expr.terms;
    const plain =
      expr.negated ||
      t.type === 'somedecl' ||
      t.type === 'somein' ||
      t.type === 'every' ||
      (t.type === 'call' && ['assign', 'eq'].includes(operatorName(t.operator)));
    if (plain) {
      parts.push(text);
      exprs.push({ text, location });
      return;
    }
    const v = captureVar(i);
    const core = coreText(expr, text);
    parts.push(`${v} = (${core})${text.slice(core.length)}`);
    if (checkCapture) parts.push(`${v} != false`);
    exprs.push({ text, location, capture: v });
  });
  return { query: parts.join('; '), exprs };
}

/** Runs the query; prints opa eval's JSON result document. */
export async function evaluateQueryCommand(queryText: string, opts: QueryOptions): Promise<void> {
  const format = opts.format as EvalFormat;
  if (!EVAL_FORMATS.includes(format))
    throw new CliError(
      `--format must be one of ${EVAL_FORMATS.join(', ')}, not ${JSON.stringify(opts.format)}`,
      ExitCode.Usage,
    );
  const { sources, data, shownAs } = gatherInputs(opts.data, { ignore: opts.ignore, v0Compatible: opts.v0Compatible });
  if (opts.bundle) {
    const b = gatherInputs([opts.bundle], { bundle: true, v0Compatible: opts.v0Compatible });
    for (const s of b.sources) sources.push(s);
    for (const [k, v] of Object.entries(b.data)) {
      if (k in data) throw new CliError(`${opts.bundle}: merge error`, ExitCode.Usage);
      data[k] = v;
    }
  }
  const input = opts.input !== undefined ? readDataFile(opts.input) : undefined;
  const capabilities = opts.capabilities !== undefined ? readCapabilitiesFile(opts.capabilities) : undefined;
  const customBuiltins = opts.builtins !== undefined ? await importCustomBuiltins(opts.builtins) : {};
  const { authoringHostBuiltins, compileQuery, instantiatePolicy, parseQuery, withCustomBuiltins } = await import(
    '../../rego/index.ts'
  );
  let body: Body;
  let compiled;
  let exprs: CapturedExpr[];
  try {
    // opa eval --v0-compatible reads the query as v0 too (deprecated builtins callable, no v1 keywords).
    const regoVersion = opts.v0Compatible ? 0 : 1;
    body = parseQuery(queryText, 'query', { regoVersion });
    const rewritten = rewriteForCapture(body);
    exprs = rewritten.exprs;
    compiled = await compileQuery({
      sources,
      query: rewritten.query,
      regoVersion,
      strictBuiltinErrors: opts.strictBuiltinErrors === true,
      ...(capabilities ? { capabilities } : {}),
      // An authoring tool: a refused builtin (http.send, …) fails the evaluation that reaches it unless the query
      // replaces it with `with`; `policy build` still refuses it (docs/policy-authoring.md).
      refusedBuiltins: 'evaluation-error',
      // opa eval compiles against the store holding the -d data: a rule where data lies is a conflict.
      conflictData: data,
    });
  } catch (e) {
    if (e instanceof RegoErrors) {
      for (const err of e.errors) {
        const file = err.location && shownAs.get(err.location.file);
        process.stderr.write(`${file ? err.format().replace(err.location!.file, file) : err.format()}\n`);
      }
      throw new CliError(`${e.errors.length} error${e.errors.length === 1 ? '' : 's'} occurred`, ExitCode.CompileError);
    }
    throw e;
  }
  const host = authoringHostBuiltins({ strict: opts.strictBuiltinErrors === true });
  let builtins;
  try {
    builtins = withCustomBuiltins(host, customBuiltins);
  } catch (e) {
    if (e instanceof TypeError) throw new CliError(`${opts.builtins}: ${e.message}`, ExitCode.Usage);
    throw e;
  }
  const policy = await instantiatePolicy(compiled.wasm, builtins);
  requireImplementations(dispatchedBuiltins(policy), [builtins], 'the query');
  policy.setData(wasmJson(data) as object);
  let rows: Record<string, unknown>[];
  try {
    rows = (await evaluateExact(policy, compiled.entrypoint, input)) as Record<string, unknown>[];
  } catch (e) {
    // A halt at a call site (`<file>:<row>: eval_builtin_error: …`) names the file as the user gave it.
    const message = e instanceof Error ? e.message : String(e);
    const site = /^([^:\n]+)(:\d+: [\s\S]*)$/.exec(message);
    const file = site && shownAs.get(site[1]);
    throw new CliError(`evaluation failed: ${file ? file + site[2] : message}`, ExitCode.Failed);
  }
  const captured = new Set(exprs.map((e) => e.capture).filter((c): c is string => c !== undefined));
  const result: EvalResult[] = rows.map((row) => {
    const bindings = Object.fromEntries(Object.entries(row).filter(([k]) => !captured.has(k)));
    return {
      expressions: exprs.map((e) => ({
        value: e.capture !== undefined ? row[e.capture] : true,
        text: e.text,
        location: e.location,
      })),
      ...(Object.keys(bindings).length ? { bindings } : {}),
    };
  });
  process.stdout.write(formatEvalOutput(format, result));
  if ((opts.fail && result.length === 0) || (opts.failDefined && result.length > 0)) process.exitCode = ExitCode.Failed;
}
