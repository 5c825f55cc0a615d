// OPA's file loader (loader/loader.go, bundle/bundle.go) for `policy build|test|eval|check`:
// - every `.rego`, `.json`, `.yaml`/`.yml` below the paths is loaded, and a `.tar.gz` as a bundle; other
//   files in a directory are skipped, and a file named on the command line with another extension is tried as Rego, JSON, YAML;
// - a data file is mounted at its directory's path below the argument (`cfg/limits.yaml` → `data.cfg`),
//   and a `a.b:path` argument mounts everything it loads below `data.a.b`;
// - documents merge as OPA's merge.InterfaceMaps does: objects merge key by key, any other value present
//   twice is a conflict (`<file>: merge error`), and a file at the root must hold an object (`document must be
//   of type object`);
// - `--ignore` patterns (Go filepath.Match syntax) exclude files and directories by name, below the paths;
// - in bundle mode (`-b`) each path is a bundle directory or `.tar.gz`: only `data.json`/`data.yaml` files
//   are data, `.manifest` gives roots, revision and Rego versions, and every package and data path must lie
//   inside the roots.
// Errors use OPA's texts and are collected like OPA's loader does (`N errors occurred during loading`): a JSON
// file's error is Go's decoder text after the path (`x.json: invalid character '}' after object key`, go-json.ts),
// a YAML file's `x.yaml: error converting YAML to JSON: yaml: line 2: …` (yaml.ts), a file that cannot be read
// Go's `open x.json: permission denied`.
import { readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { basename, join, normalize, resolve } from 'node:path';
import { parseModule } from '../ast/index.ts';
import type { Term } from '../ast/types.ts';
import { goQuote } from '../builtins/host/format.ts';
import { RegoErrors } from '../errors.ts';
import { isObject } from '../json.ts';
import { decodeGoJson, type GoType, isGoJsonValid, parseGoJson } from './go-json.ts';
import { BundleError, readBundle, regoVersionForFile, type BundleManifest } from './index.ts';
import { parseYamlData, YamlDataError } from './yaml.ts';

export interface LoadedRegoFile {
  /** The path as the loader reached it: the argument joined with the names below it. */
  path: string;
  /** The path relative to the directory argument it was found under; the base name for a file argument. */
  relative: string;
  /** Reached by walking a directory argument (rather than named on the command line). */
  inDirectory: boolean;
  text: string;
  /** Set when a bundle manifest says how to read the file (rego_version / file_rego_versions). */
  regoVersion?: 0 | 1;
}

export interface LoadedPaths {
  modules: LoadedRegoFile[];
  data: Record<string, unknown>;
  /** Bundle mode: the merged manifest (roots of every bundle; revision and metadata of a single one). */
  manifest?: BundleManifest;
}

export interface LoaderOptions {
  /** File and directory names to skip below the paths (Go filepath.Match patterns, e.g. `.*`). */
  ignore?: readonly string[];
  /** Read each path as a bundle directory or `.tar.gz` (OPA's `--bundle`). */
  asBundle?: boolean;
  /** Load only `.rego` files (`opa check`). */
  onlyRego?: boolean;
  /** Files never loaded, by absolute path (a build's own output inside its input directory). */
  exclude?: readonly string[];
  /** How bundle-mode modules without a manifest version are read, for the roots check (default 1). */
  regoVersion?: 0 | 1;
}

/** Loading failed; `errors` are OPA's one-line texts, `message` OPA's summary of them. */
export class LoaderError extends Error {
  constructor(readonly errors: string[]) {
    super(
      errors.length === 1
        ? `1 error occurred during loading: ${errors[0]}`
        : `${errors.length} errors occurred during loading:\n${errors.join('\n')}`,
    );
    this.name = 'LoaderError';
  }
}

/** An `--ignore` pattern is not valid Go filepath.Match syntax. */
export class IgnorePatternError extends Error {}

/** OPA's merge.InterfaceMaps: false when a key present in both is not an object on both sides. */
function hasConflicts(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  for (const k of Object.keys(b)) {
    if (!(k in a)) continue;
    const x = a[k];
    const y = b[k];
    if (!isObject(x) || !isObject(y) || hasConflicts(x, y)) return true;
  }
  return false;
}

function mergeInto(a: Record<string, unknown>, b: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(b)) {
    const x = a[k];
    if (isObject(x) && isObject(v)) mergeInto(x, v);
    else a[k] = v;
  }
}

/** Wraps `value` in objects along `path` (OPA's makeDir); undefined when a root document is not an object. */
function makeDir(path: readonly string[], value: unknown): Record<string, unknown> | undefined {
  let v = value;
  for (let i = path.length - 1; i >= 0; i--) v = { [path[i]]: v };
  return isObject(v) ? v : undefined;
}

/** Translates a Go filepath.Match pattern into a RegExp over a file name. */
export function goGlobMatcher(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\') {
      if (i + 1 >= pattern.length) throw new IgnorePatternError(`syntax error in pattern ${JSON.stringify(pattern)}`);
      re += escapeRegExp(pattern[++i]);
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) throw new IgnorePatternError(`syntax error in pattern ${JSON.stringify(pattern)}`);
      let body = pattern.slice(i + 1, end);
      const negated = body.startsWith('^');
      if (negated) body = body.slice(1);
      re += `[${negated ? '^' : ''}${body.replace(/[\]\\^]/g, (m) => `\\${m}`)}]`;
      i = end;
    } else re += escapeRegExp(c);
  }
  try {
    return new RegExp(`^${re}$`, 's');
  } catch {
    throw new IgnorePatternError(`syntax error in pattern ${JSON.stringify(pattern)}`);
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** OPA's SplitPrefix: `a.b:path` → (["a","b"], "path"); a URL scheme (`file://`) is no prefix. */
export function splitPathPrefix(arg: string): { prefix: string[]; path: string } {
  const colon = arg.indexOf(':');
  if (colon <= 0 || arg.indexOf('://') === colon) return { prefix: [], path: arg };
  return { prefix: arg.slice(0, colon).split('.'), path: arg.slice(colon + 1) };
}

/** Go's text for the errno of a failed file system call (syscall.Errno.Error()). */
const GO_ERRNO: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'file name too long',
  EMFILE: 'too many open files',
  EIO: 'input/output error',
};

/** A Go *fs.PathError: `<op> <path>: <errno text>`. */
function goPathError(op: 'stat' | 'open' | 'read', path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return `${op} ${path}: ${GO_ERRNO[code] ?? (err as Error).message}`;
}

/** os.ReadFile: the bytes, or Go's `open <path>: …` / `read <path>: …`. */
function readBytes(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
    // Reading a directory opens fine in Go and fails on read.
    throw new Error(goPathError((e as NodeJS.ErrnoException).code === 'EISDIR' ? 'read' : 'open', path, e));
  }
}

/** OPA's loadJSON: util.UnmarshalJSON, its error after the path. */
function parseJsonDocument(path: string, bytes: Uint8Array): unknown {
  try {
    return parseGoJson(bytes);
  } catch (e) {
    throw new Error(`${path}: ${(e as Error).message}`);
  }
}

/** OPA's loadYAML: sigs.k8s.io/yaml's YAMLToJSON (see parseYamlData), its error after the path and OPA's words. */
function parseYamlDocument(path: string, bytes: Uint8Array): unknown {
  try {
    return parseYamlData(bytes);
  } catch (e) {
    if (e instanceof YamlDataError) throw new Error(`${path}: error converting YAML to JSON: ${e.message}`);
    throw e;
  }
}

type Known = { kind: 'rego'; text: string } | { kind: 'data'; value: unknown } | { kind: 'unknown' };

const utf8 = new TextDecoder();

function loadKnownType(path: string, bytes: Uint8Array): Known {
  if (path.endsWith('.rego')) return { kind: 'rego', text: utf8.decode(bytes) };
  if (path.endsWith('.json')) return { kind: 'data', value: parseJsonDocument(path, bytes) };
  if (path.endsWith('.yaml') || path.endsWith('.yml')) return { kind: 'data', value: parseYamlDocument(path, bytes) };
  return { kind: 'unknown' };
}

/** A file named on the command line with an unknown extension: Rego, then JSON, then YAML (OPA). */
function loadAnyType(path: string, bytes: Uint8Array, regoVersion: 0 | 1): Known {
  const text = utf8.decode(bytes);
  try {
    parseModule(path, text, { regoVersion });
    return { kind: 'rego', text };
  } catch {
    // not Rego
  }
  try {
    return { kind: 'data', value: parseGoJson(bytes) };
  } catch {
    // not JSON
  }
  try {
    return { kind: 'data', value: parseYamlData(bytes) };
  } catch {
    throw new Error(`${path}: can't recognize file type`);
  }
}

interface Walked {
  path: string;
  relative: string;
  depth: number;
  /** Directory names between the argument and the file. */
  dirs: string[];
}

/** Files below `root` in OPA's order (names sorted per directory), with the filter applied below depth 0. */
function walk(root: string, skip: (name: string, path: string, depth: number) => boolean, errors: string[]): Walked[] {
  const out: Walked[] = [];
  const visit = (path: string, name: string, depth: number, dirs: string[], relative: string): void => {
    let st: Stats;
    try {
      st = statSync(path);
    } catch (e) {
      errors.push(goPathError('stat', path, e));
      return;
    }
    if (skip(name, path, depth)) return;
    if (!st.isDirectory()) {
      out.push({ path, relative: relative || basename(path), depth, dirs });
      return;
    }
    const below = depth > 0 ? [...dirs, name] : dirs;
    let names: string[];
    try {
      names = readdirSync(path).sort();
    } catch (e) {
      errors.push(goPathError('open', path, e));
      return;
    }
    for (const n of names) visit(join(path, n), n, depth + 1, below, relative ? `${relative}/${n}` : n);
  };
  visit(normalize(root), basename(root), 0, [], '');
  return out;
}

/**
 * A `.tar.gz` found by the loader is a bundle (OPA's loadBundleFile): its modules join the others (named
 * `<tarball>/<path>`), its data merges below the file's directory, and its manifest is mounted at
 * `data.system.bundle.manifest` as OPA's IncludeManifestInData does.
 */
function mergeTarball(
  f: Walked,
  prefix: string[],
  modules: Map<string, LoadedRegoFile>,
  data: Record<string, unknown>,
): void {
  const bytes = readBytes(f.path);
  let b;
  try {
    b = readBundle(bytes);
  } catch (e) {
    throw new Error(`bundle ${f.path}: ${(e as Error).message}`);
  }
  for (const s of b.sources) {
    const path = `${f.path}${s.path}`;
    const relative = f.depth > 0 ? `${f.relative}${s.path}` : s.path.slice(1);
    const version = s.regoVersion !== undefined ? { regoVersion: s.regoVersion } : {};
    modules.set(path, { path, relative, inDirectory: true, text: s.text, ...version });
  }
  const doc = makeDir([...prefix, ...f.dirs], { ...b.data, system: { bundle: { manifest: b.manifest } } });
  if (!doc || hasConflicts(data, doc)) throw new Error(`${f.path}: merge error`);
  mergeInto(data, doc);
}

/** Loads Rego modules and data documents from `paths` with OPA's loader rules (module comment). */
export function loadPaths(paths: readonly string[], options: LoaderOptions = {}): LoadedPaths {
  const ignore = (options.ignore ?? []).map(goGlobMatcher);
  const exclude = new Set((options.exclude ?? []).map((p) => resolve(p)));
  const skip = (name: string, path: string, depth: number): boolean =>
    exclude.has(resolve(path)) || (depth >= 1 && ignore.some((re) => re.test(name)));
  if (options.asBundle) return loadBundles(paths, skip, options);

  const errors: string[] = [];
  const modules = new Map<string, LoadedRegoFile>();
  const data: Record<string, unknown> = {};
  for (const arg of paths) {
    const { prefix, path } = splitPathPrefix(arg);
    for (const f of walk(path, skip, errors)) {
      if (options.onlyRego && !f.path.endsWith('.rego')) continue;
      try {
        if (f.path.endsWith('.tar.gz')) {
          if (options.onlyRego) continue;
          mergeTarball(f, prefix, modules, data);
          continue;
        }
        const bytes = readBytes(f.path);
        let loaded = loadKnownType(f.path, bytes);
        if (loaded.kind === 'unknown') {
          if (f.depth > 0) continue;
          loaded = loadAnyType(f.path, bytes, options.regoVersion ?? 1);
        }
        if (loaded.kind === 'rego') {
          modules.set(f.path, { path: f.path, relative: f.relative, inDirectory: f.depth > 0, text: loaded.text });
          continue;
        }
        if (loaded.kind !== 'data') continue;
        const doc = makeDir([...prefix, ...f.dirs], loaded.value);
        if (!doc) throw new Error(`${f.path}: document must be of type object`);
        if (hasConflicts(data, doc)) throw new Error(`${f.path}: merge error`);
        mergeInto(data, doc);
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
  }
  if (errors.length) throw new LoaderError(errors);
  return { modules: [...modules.values()], data };
}

// ---- bundle mode ----

const rootSegments = (p: string): string[] => p.split('/');

/** OPA's rootContains: the root `""` holds everything; otherwise a segment-wise prefix. */
function rootContains(root: string, path: string): boolean {
  const r = rootSegments(root);
  const o = rootSegments(path);
  if (r.length === 1 && r[0] === '') return true;
  if (r.length > o.length) return false;
  return r.every((s, i) => s === o[i]);
}

const rootPathsContain = (roots: readonly string[], path: string): boolean => roots.some((r) => rootContains(r, path));

/** Go's `%v` of a []string. */
const goList = (xs: readonly string[]): string => `[${xs.join(' ')}]`;

function termText(t: Term): string {
  const v = (t as { value: unknown }).value;
  return typeof v === 'string' ? v : '?';
}

interface LoadedBundle {
  manifest: BundleManifest;
  roots: string[];
  modules: LoadedRegoFile[];
  data: Record<string, unknown>;
}

function insertBundleData(data: Record<string, unknown>, file: string, dirs: string[], value: unknown): void {
  const doc = makeDir(dirs, value);
  if (!doc) throw new Error(`bundle load failed on ${file}: root value must be object`);
  if (hasConflicts(data, doc))
    throw new Error(`bundle load failed on ${file}: failed to insert data file from path ${dirs.join('/')}`);
  mergeInto(data, doc);
}

function readBundleDirectory(
  dir: string,
  skip: (name: string, path: string, depth: number) => boolean,
  errors: string[],
): Omit<LoadedBundle, 'roots'> {
  let manifest: BundleManifest = {};
  const modules: LoadedRegoFile[] = [];
  const data: Record<string, unknown> = {};
  for (const f of walk(dir, skip, errors)) {
    const name = basename(f.path);
    const bundlePath = `/${f.relative}`;
    // OPA's bundle reader reads every file before looking at its name (a lazily opened file).
    let bytes: Uint8Array;
    try {
      bytes = readBytes(f.path);
    } catch (e) {
      throw new Error(`failed to open file ${f.path}: ${(e as Error).message}`);
    }
    if (name.endsWith('.rego')) {
      modules.push({ path: f.path, relative: f.relative, inDirectory: true, text: utf8.decode(bytes) });
    } else if (name === 'data.json' || name === 'data.yaml' || name === 'data.yml') {
      let value: unknown;
      try {
        value = name === 'data.json' ? parseGoJson(bytes) : unmarshalYamlOrJson(bytes);
      } catch (e) {
        throw new Error(`bundle load failed on ${f.path}: ${(e as Error).message}`);
      }
      insertBundleData(data, bundlePath, f.dirs, value);
    } else if (name.endsWith('.manifest')) {
      try {
        // Each .manifest decodes into the one Manifest struct, as OPA's reader does.
        manifest = (decodeGoJson(bytes, MANIFEST, manifest) ?? {}) as BundleManifest;
      } catch (e) {
        throw new Error(`bundle load failed on manifest decode: ${(e as Error).message}`);
      }
    }
  }
  return { manifest, modules, data };
}

const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * OPA's util.Unmarshal, which reads a bundle's data.yaml: a UTF-8 BOM is dropped, valid JSON is read as JSON,
 * anything else through sigs.k8s.io/yaml's YAMLToJSON, whose error is go-yaml's own (`yaml: line 1: …`).
 */
function unmarshalYamlOrJson(bytes: Uint8Array): unknown {
  const text = bytes.length >= 3 && UTF8_BOM.every((b, i) => bytes[i] === b) ? bytes.subarray(3) : bytes;
  if (isGoJsonValid(text)) return parseGoJson(text);
  return parseYamlData(text);
}

const STRING: GoType = { kind: 'string' };

/** OPA's bundle.Manifest (bundle/bundle.go) as encoding/json sees it: the fields, their JSON names and Go types. */
const MANIFEST: GoType = {
  kind: 'struct',
  pkg: 'bundle',
  name: 'Manifest',
  fields: [
    { name: 'revision', type: STRING },
    { name: 'roots', type: { kind: 'pointer', elem: { kind: 'slice', elem: STRING } } },
    {
      name: 'wasm',
      type: {
        kind: 'slice',
        elem: {
          kind: 'struct',
          pkg: 'bundle',
          name: 'WasmResolver',
          fields: [
            { name: 'entrypoint', type: STRING },
            { name: 'module', type: STRING },
            {
              name: 'annotations',
              type: {
                kind: 'slice',
                elem: {
                  kind: 'pointer',
                  elem: { kind: 'struct', pkg: 'ast', name: 'Annotations', fields: [], open: true },
                },
              },
            },
          ],
        },
      },
    },
    { name: 'rego_version', type: { kind: 'pointer', elem: { kind: 'int' } } },
    { name: 'file_rego_versions', type: { kind: 'map', elem: { kind: 'int' } } },
    { name: 'metadata', type: { kind: 'map', elem: { kind: 'any' } } },
  ],
};

/** OPA's Manifest.validateAndInjectDefaults: roots do not overlap, and hold every package and data path. */
function validateRoots(roots: string[], modules: LoadedRegoFile[], data: Record<string, unknown>, v: 0 | 1): void {
  for (let i = 0; i < roots.length - 1; i++)
    for (let j = i + 1; j < roots.length; j++)
      if (rootContains(roots[i], roots[j]) || rootContains(roots[j], roots[i]))
        throw new Error(`manifest has overlapped roots: '${roots[i]}' and '${roots[j]}'`);
  for (const m of modules) {
    const parsed = parseModule(m.path, m.text, { regoVersion: m.regoVersion ?? v });
    const pkg = parsed.package.path.slice(1).map(termText);
    if (!rootPathsContain(roots, pkg.join('/')))
      throw new Error(`manifest roots ${goList(roots)} do not permit 'package ${pkg.join('.')}' in module '${m.path}'`);
  }
  const dfs = (node: unknown, path: string): void => {
    const p = path.replace(/^\/+|\/+$/g, '');
    if (rootPathsContain(roots, p)) return;
    if (isObject(node) && roots.some((r) => rootContains(p, r))) {
      for (const k of Object.keys(node).sort()) dfs(node[k], `${path}/${k}`);
      return;
    }
    throw new Error(
      `manifest roots ${goList(roots)} do not permit data at path '/${p}' (hint: check bundle directory structure)`,
    );
  };
  dfs(data, '');
}

function loadOneBundle(
  path: string,
  skip: (name: string, path: string, depth: number) => boolean,
  options: LoaderOptions,
  errors: string[],
): LoadedBundle {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    throw new Error(`error reading ${goQuote(path)}: ${goPathError('stat', path, e)}`);
  }
  let b: Omit<LoadedBundle, 'roots'>;
  if (st.isDirectory()) b = readBundleDirectory(path, skip, errors);
  else {
    let read;
    try {
      read = readBundle(readBytes(path));
    } catch (e) {
      throw new Error(e instanceof BundleError ? e.message : String(e));
    }
    b = {
      manifest: read.manifest,
      data: read.data,
      modules: read.sources.map((s) => ({
        path: s.path,
        relative: s.path.slice(1),
        inDirectory: true,
        text: s.text,
        ...(s.regoVersion !== undefined ? { regoVersion: s.regoVersion } : {}),
      })),
    };
  }
  if (b.manifest.rego_version !== undefined || b.manifest.file_rego_versions !== undefined)
    for (const m of b.modules) m.regoVersion ??= regoVersionForFile(b.manifest, m.relative);
  const roots = (b.manifest.roots ?? ['']).map((r) => r.replace(/^\/+|\/+$/g, ''));
  validateRoots(roots, b.modules, b.data, options.regoVersion ?? 1);
  return { ...b, roots };
}

function loadBundles(
  paths: readonly string[],
  skip: (name: string, path: string, depth: number) => boolean,
  options: LoaderOptions,
): LoadedPaths {
  const errors: string[] = [];
  const bundles: LoadedBundle[] = [];
  for (const path of paths) {
    try {
      bundles.push(loadOneBundle(normalize(path), skip, options, errors));
    } catch (e) {
      if (e instanceof RegoErrors) throw e;
      errors.push(`bundle ${normalize(path)}: ${(e as Error).message}`);
    }
  }
  if (errors.length) throw new LoaderError(errors);
  if (bundles.length === 1) {
    const [b] = bundles;
    return { modules: b.modules, data: b.data, manifest: { ...b.manifest, roots: b.roots } };
  }
  // OPA's bundle.Merge: the roots of all bundles, which must not overlap; each bundle's data under its roots.
  const roots = bundles.flatMap((b) => b.roots);
  const data: Record<string, unknown> = {};
  try {
    for (const b of bundles) {
      for (const root of b.roots) {
        const key = root === '' ? [] : rootSegments(root);
        let node: unknown = b.data;
        for (const k of key) node = isObject(node) ? node[k] : undefined;
        if (node === undefined) continue;
        const doc = makeDir(key, node);
        if (!doc || hasConflicts(data, doc)) throw new Error(`failed to insert data file from path ${key.join('/')}`);
        mergeInto(data, doc);
      }
    }
    const modules = bundles.flatMap((b) => b.modules);
    validateRoots(roots, modules, data, options.regoVersion ?? 1);
    return { modules, data, manifest: { roots } };
  } catch (e) {
    if (e instanceof RegoErrors) throw e;
    throw new LoaderError([`bundle merge failed: ${(e as Error).message}`]);
  }
}
