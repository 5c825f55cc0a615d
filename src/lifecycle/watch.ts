// Development loops: watch a directory of bundles (`bundles/`) and activate a rebuilt bundle, and
// `watchAndBuild` (Rego sources → bundle file on every change; `guardian policy build --watch` can call it).
import {
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { sha256Hex } from '../chain/index.ts';
import type { LifecycleNode } from './node/index.ts';
import { compileRegoDirectory } from './rego-directory.ts';

export interface DirectoryWatch {
  close(): void;
  /** Checks the directory now (also run on every fs event and every `intervalMs`). */
  scan(): Promise<void>;
}

export interface WatchBundleDirectoryOptions {
  /** File to follow inside the directory (default: every `*.tar.gz`, newest modification wins). */
  file?: string;
  /** Debounce after an fs event (default 150 ms): editors and builders write in several steps. */
  debounceMs?: number;
  /** Polling fallback (default 1000 ms): fs.watch misses events on some filesystems. */
  intervalMs?: number;
  onEvent?: (e: { file: string; outcome: 'activated' | 'refused' | 'unchanged'; detail: string }) => void;
  /**
   * Activate the file present when watching starts, if it differs from the active version (default false: only
   * changes made while watching go live, so a restart does not undo an activation made through the registry).
   */
  activateExisting?: boolean;
}

/** Activates the newest bundle in `dir` whenever its content changes; a bad bundle is reported, the old one kept. */
export function watchBundleDirectory(
  dir: string,
  node: LifecycleNode,
  options: WatchBundleDirectoryOptions = {},
): DirectoryWatch {
  const root = resolve(dir);
  let lastSha: string | null = null;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const pick = (): string | null => {
    if (options.file) return existsSync(join(root, options.file)) ? join(root, options.file) : null;
    if (!existsSync(root)) return null;
    const files = readdirSync(root)
      .filter((f) => f.endsWith('.tar.gz'))
      .map((f) => join(root, f));
    files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    return files[0] ?? null;
  };
  const scanOnce = async (): Promise<void> => {
    const file = pick();
    if (!file) return;
    const bytes = new Uint8Array(readFileSync(file));
    const sha = sha256Hex(bytes);
    if (sha === lastSha || sha === node.engine.current.sha256) {
      lastSha = sha;
      return;
    }
    lastSha = sha;
    try {
      const r = await node.push(bytes, {
        source: `file:${file}`,
        activate: true,
        by: `watch:${relative(process.cwd(), file) || file}`,
      });
      options.onEvent?.({ file, outcome: 'activated', detail: r.activation?.revision ?? '' });
    } catch (e) {
      options.onEvent?.({ file, outcome: 'refused', detail: (e as Error).message });
    }
  };
  const scan = (): Promise<void> => (running = running.then(scanOnce, scanOnce));
  if (!options.activateExisting) {
    const existing = pick();
    if (existing) lastSha = sha256Hex(new Uint8Array(readFileSync(existing)));
  }
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(root, { persistent: false }, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void scan(), options.debounceMs ?? 150);
    });
  } catch {
    watcher = undefined; // the directory may not exist yet: polling covers it
  }
  const poll = setInterval(() => void scan(), options.intervalMs ?? 1000);
  poll.unref();
  return {
    scan,
    close() {
      clearTimeout(timer);
      clearInterval(poll);
      watcher?.close();
    },
  };
}

export interface WatchAndBuildOptions {
  entrypoints: string[];
  /** Output bundle path (written atomically: temp file + rename). */
  out: string;
  debounceMs?: number;
  onBuild?: (e: { ok: true; revision: string; bytes: number } | { ok: false; error: string }) => void;
}

/** Rebuilds `out` from the Rego sources (and root data.json) in `dir` on every change; returns a closer. */
export function watchAndBuild(dir: string, options: WatchAndBuildOptions): { close(): void; build(): Promise<void> } {
  const root = resolve(dir);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const buildOnce = async (): Promise<void> => {
    try {
      const compiled = await compileRegoDirectory(root, options.entrypoints);
      const tmp = `${options.out}.tmp-${process.pid}`;
      writeFileSync(tmp, compiled.bundle);
      renameSync(tmp, options.out);
      options.onBuild?.({ ok: true, revision: String(compiled.manifest.revision), bytes: compiled.bundle.length });
    } catch (e) {
      options.onBuild?.({ ok: false, error: e instanceof Error ? e.message : String(e) });
    }
  };
  const build = (): Promise<void> => (running = running.then(buildOnce, buildOnce));
  const watcher = watch(root, { recursive: true, persistent: false }, (_ev, name) => {
    if (name && !/\.(rego|json|ya?ml)$/.test(String(name))) return;
    clearTimeout(timer);
    timer = setTimeout(() => void build(), options.debounceMs ?? 200);
  });
  return {
    build,
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
