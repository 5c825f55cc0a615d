// `guardian policy build` (docs/bundles.md): compile Rego to an OPA bundle with our Wasm toolchain and write it
// atomically, once or on every change (`--watch`). Rego errors are printed at the paths the user typed.
import { renameSync, statSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { isObject } from '../../json.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { RegoError, RegoErrors } from '../../rego/errors.ts';
import { gatherInputs, readDataFile } from './policy-inputs.ts';
import { readCapabilitiesFile } from './policy-capabilities.ts';

export interface BuildOptions {
  entrypoint: string[];
  output: string;
  revision?: string;
  data?: string;
  quiet?: boolean;
  strictBuiltinErrors?: boolean;
  watch?: boolean;
  v0Compatible?: boolean;
  capabilities?: string;
  ignore: string[];
  bundle?: boolean;
  target: string;
  optimize?: string;
}

/** Manifest metadata key recording that the bundle was built with strict builtin errors. */
export const STRICT_BUILTIN_ERRORS_METADATA = 'strict_builtin_errors';

function progress(opts: { quiet?: boolean }, line: string): void {
  if (!opts.quiet) process.stderr.write(`${line}\n`);
}

/** `--data FILE`: merged at the root of data with the loader's conflict rule (a key both define is an error). */
function mergeRootData(target: Record<string, unknown>, value: unknown, file: string): void {
  if (!isObject(value)) throw new CliError(`${file}: document must be of type object`, ExitCode.Usage);
  const merge = (a: Record<string, unknown>, b: Record<string, unknown>): void => {
    for (const [k, v] of Object.entries(b)) {
      const x = a[k];
      if (x === undefined) a[k] = v;
      else if (isObject(x) && isObject(v)) merge(x, v);
      else throw new CliError(`${file}: merge error`, ExitCode.Usage);
    }
  };
  merge(target, value);
}

/** A diagnostic located at the path the user typed rather than the bundle path. */
function shownAt(err: RegoError, shownAs: Map<string, string>): RegoError {
  const file = err.location && shownAs.get(err.location.file);
  return file && err.location ? new RegoError(err.code, err.message, { ...err.location, file }, err.details) : err;
}

function printRegoErrors(e: RegoErrors, shownAs: Map<string, string>): never {
  for (const err of e.errors) process.stderr.write(`${shownAt(err, shownAs).format()}\n`);
  throw new CliError(`${e.errors.length} error${e.errors.length === 1 ? '' : 's'} occurred`, ExitCode.CompileError);
}

async function build(paths: string[], opts: BuildOptions): Promise<void> {
  const { sources, data, shownAs, manifest } = gatherInputs(paths, { ...opts, exclude: [opts.output] });
  if (sources.length === 0) throw new CliError('no .rego files found', ExitCode.Usage);
  if (opts.data) mergeRootData(data, readDataFile(opts.data), opts.data);
  const capabilities = opts.capabilities !== undefined ? readCapabilitiesFile(opts.capabilities) : undefined;
  const asked = opts.entrypoint ?? [];
  const modules = `${sources.length} module${sources.length === 1 ? '' : 's'}`;
  // Without -e the entrypoints are known once the modules are parsed; the line comes after compiling.
  if (asked.length) progress(opts, `compiling ${modules} for ${asked.join(', ')}`);
  const t0 = Date.now();
  // Loaded on demand: the toolchain (binaryen, opa-wasm) is heavy and other commands do not need it.
  const { compileBundle } = await import('../../rego/index.ts');
  let result;
  try {
    const revision = opts.revision ?? manifest?.revision;
    result = await compileBundle({
      sources,
      entrypoints: asked,
      data,
      ...(revision !== undefined ? { revision } : {}),
      ...(manifest?.roots ? { roots: manifest.roots } : {}),
      ...(capabilities ? { capabilities } : {}),
      // Recorded in the manifest so engines loading the bundle create their host builtins in strict mode too.
      ...(opts.strictBuiltinErrors
        ? { strictBuiltinErrors: true, metadata: { [STRICT_BUILTIN_ERRORS_METADATA]: true } }
        : {}),
    });
  } catch (e) {
    // planSources refuses an empty entrypoint list: neither -e nor a METADATA `entrypoint: true` named one.
    if (e instanceof RegoErrors && asked.length === 0 && e.errors[0]?.message === 'at least one entrypoint is required')
      throw new CliError(
        'no entrypoints: pass -e pkg/rule or annotate a rule with METADATA entrypoint: true',
        ExitCode.Usage,
      );
    if (e instanceof RegoErrors) printRegoErrors(e, shownAs);
    throw e;
  }
  const compiled = (result.manifest.wasm ?? []).map((w) => w.entrypoint);
  if (asked.length === 0)
    progress(opts, `compiled ${modules} for ${compiled.join(', ')} (entrypoints from METADATA entrypoint: true)`);
  else {
    const added = compiled.filter((ep) => !asked.includes(ep));
    if (added.length) progress(opts, `also compiled ${added.join(', ')} (METADATA entrypoints, rules reading one)`);
  }
  // Write then rename: a Guardian watching the bundle directory must never load a half-written file.
  const tmp = `${opts.output}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, result.bundle);
    renameSync(tmp, opts.output);
  } catch (e) {
    throw new CliError(`cannot write ${opts.output}: ${(e as Error).message}`, ExitCode.Usage);
  }
  progress(opts, `linked policy.wasm (${result.wasm.length} bytes) in ${Date.now() - t0} ms`);
  progress(opts, `wrote ${opts.output} (${result.bundle.length} bytes, revision ${result.manifest.revision})`);
}

/**
 * `--watch`: build, then rebuild whenever a .rego or data file under the inputs changes (debounced, one
 * build at a time), until SIGINT/SIGTERM. A failed rebuild is reported and the last good bundle stays.
 */
export async function buildAndWatch(paths: string[], opts: BuildOptions): Promise<void> {
  // opa build's flags for what it builds: every Guardian bundle is a Wasm one (with its plan).
  if (opts.target === 'rego')
    throw new CliError(
      '-t rego: the Guardian builds Wasm bundles only (-t wasm); a Rego bundle is the sources and data as they are',
      ExitCode.Usage,
    );
  if (opts.target !== 'wasm' && opts.target !== 'plan')
    throw new CliError(`-t must be wasm or plan, not ${JSON.stringify(opts.target)}`, ExitCode.Usage);
  if (opts.optimize !== undefined && !/^[0-2]$/.test(opts.optimize))
    throw new CliError(`-O must be 0, 1 or 2, not ${JSON.stringify(opts.optimize)}`, ExitCode.Usage);
  if (opts.optimize !== undefined && opts.optimize !== '0')
    progress(opts, `-O ${opts.optimize}: OPA's partial-evaluation rewrite is not applied; the bundle keeps its rules`);
  if (!opts.watch) return build(paths, opts);
  const rebuild = async (): Promise<void> => {
    try {
      await build(paths, opts);
    } catch (e) {
      // Rego errors were already printed with their locations by build().
      if (!(e instanceof RegoErrors)) process.stderr.write(`guardian: ${(e as Error).message}\n`);
      process.stderr.write('guardian: build failed; keeping the previous bundle, waiting for changes\n');
    }
  };
  await rebuild();
  let timer: NodeJS.Timeout | undefined;
  let running = Promise.resolve();
  const schedule = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => void (running = running.then(rebuild)), 200);
  };
  const watchers: FSWatcher[] = paths.map((p) =>
    watch(statSync(p).isDirectory() ? p : dirname(p), { recursive: true }, (_event, name) => {
      if (name && /\.(rego|json|ya?ml)$/.test(String(name))) schedule();
    }),
  );
  process.stderr.write(`watching ${paths.join(', ')} for changes (Ctrl-C to stop)\n`);
  await new Promise<void>((resolveStop) => {
    const stop = (): void => {
      clearTimeout(timer);
      for (const w of watchers) w.close();
      void running.then(() => resolveStop());
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
