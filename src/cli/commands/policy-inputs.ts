// What `policy build|test|eval|check` read from their path arguments: src/rego/bundle/loader.ts applies OPA's
// loader rules; this file turns its result into bundle sources and CLI errors. A directory's files keep their
// path relative to it; files named on the command line are placed relative to their common directory, so
// `/abs/dir/p.rego` run from anywhere is `/p.rego` in the bundle.
import { readFileSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { Option } from 'commander';
import type { BundleManifest } from '../../rego/bundle/index.ts';
import { parseGoJson } from '../../rego/bundle/go-json.ts';
import { IgnorePatternError, LoaderError, loadPaths } from '../../rego/bundle/loader.ts';
import { parseYamlData } from '../../rego/bundle/yaml.ts';
import { RegoErrors } from '../../rego/errors.ts';
import type { RegoSource } from '../../rego/index.ts';
import { CliError, ExitCode } from '../exit-codes.ts';

export interface PolicyInputs {
  sources: RegoSource[];
  data: Record<string, unknown>;
  /** Bundle path → the path the user typed, for error locations of files named on the command line. */
  shownAs: Map<string, string>;
  /** Bundle mode: the merged `.manifest` (roots, and revision/metadata of a single bundle). */
  manifest?: BundleManifest;
}

export interface InputOptions {
  v0Compatible?: boolean;
  /** `--ignore` patterns. */
  ignore?: string[];
  /** `-b/--bundle`: the paths are bundle directories or .tar.gz files. */
  bundle?: boolean;
  onlyRego?: boolean;
  /** Files never read (a build's output). */
  exclude?: string[];
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `--ignore <pattern>`, as `opa build|test|eval|check` have it. */
export function ignoreOption(): Option {
  return new Option(
    '--ignore <pattern>',
    "skip files and directories with this name below the paths (Go glob, repeatable; '.*' skips hidden files)",
  )
    .argParser(collect)
    .default([]);
}

/** `-b/--bundle`: the paths are bundles (OPA's flag of the same name). */
export function bundleModeOption(): Option {
  return new Option(
    '-b, --bundle',
    'read the paths as bundle directories or .tar.gz files: only data.json/data.yaml are data, .manifest roots are enforced',
  );
}

/**
 * A JSON or YAML document (`--data`, `--input`; `-` is stdin), read as OPA reads data files (util.Unmarshal): JSON
 * with numbers kept as written where a double would change them, YAML through go-yaml's rules (loader.ts).
 */
export function readDataFile(file: string): unknown {
  let text: Uint8Array;
  try {
    text = file === '-' ? readFileSync(0) : readFileSync(file);
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, ExitCode.Usage);
  }
  try {
    return file.endsWith('.yaml') || file.endsWith('.yml') ? parseYamlData(text) : parseGoJson(text);
  } catch (e) {
    throw new CliError(
      `${file}: invalid ${file.endsWith('.json') || file === '-' ? 'JSON' : 'YAML'}: ${(e as Error).message}`,
      ExitCode.Usage,
    );
  }
}

/** The deepest directory holding every one of `files` (their common ancestor). */
function commonDirectory(files: string[]): string {
  const split = (p: string): string[] => dirname(resolve(p)).split(sep);
  let common = split(files[0]);
  for (const f of files.slice(1)) {
    const segs = split(f);
    let n = 0;
    while (n < common.length && n < segs.length && common[n] === segs[n]) n++;
    common = common.slice(0, n);
  }
  return common.join(sep) || sep;
}

/** Loads the path arguments with OPA's loader rules; a loading error is a usage error (exit 2). */
export function gatherInputs(paths: string[], opts: InputOptions = {}): PolicyInputs {
  let loaded;
  try {
    loaded = loadPaths(paths, {
      ignore: opts.ignore ?? [],
      asBundle: opts.bundle === true,
      onlyRego: opts.onlyRego === true,
      exclude: opts.exclude ?? [],
      regoVersion: opts.v0Compatible ? 0 : 1,
    });
  } catch (e) {
    if (e instanceof IgnorePatternError) throw new CliError(`--ignore: ${e.message}`, ExitCode.Usage);
    if (e instanceof LoaderError) {
      // Every error on its own line, then OPA's summary as the one `guardian:` line.
      if (e.errors.length > 1) for (const line of e.errors) process.stderr.write(`${line}\n`);
      throw new CliError(e.errors.length > 1 ? e.message.split('\n')[0] : e.message, ExitCode.Usage);
    }
    if (e instanceof RegoErrors) {
      for (const err of e.errors) process.stderr.write(`${err.format()}\n`);
      throw new CliError(`${e.errors.length} error${e.errors.length === 1 ? '' : 's'} occurred`, ExitCode.CompileError);
    }
    throw e;
  }
  const shownAs = new Map<string, string>();
  const sources: RegoSource[] = [];
  const named = loaded.modules.filter((m) => !m.inDirectory);
  const root = named.length > 0 ? commonDirectory(named.map((m) => m.path)) : '';
  for (const m of loaded.modules) {
    let file = m.relative;
    if (!m.inDirectory) {
      file = resolve(m.path).slice(root.length).split(sep).filter(Boolean).join('/');
      shownAs.set(file, m.path);
    }
    const regoVersion = m.regoVersion ?? (opts.v0Compatible ? 0 : undefined);
    sources.push({ file, text: m.text, ...(regoVersion !== undefined ? { regoVersion } : {}) });
  }
  const seen = new Set<string>();
  for (const s of sources) {
    if (seen.has(s.file)) throw new CliError(`two sources map to the same bundle path ${s.file}`, ExitCode.Usage);
    seen.add(s.file);
  }
  return { sources, data: loaded.data, shownAs, ...(loaded.manifest ? { manifest: loaded.manifest } : {}) };
}
