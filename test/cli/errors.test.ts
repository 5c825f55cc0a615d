// Every `guardian` command, enumerated from commander's tree, with an unknown flag, a missing required
// argument, a missing or malformed input file and an unreachable database: each ends with its documented exit
// code and one `guardian: …` line on stderr, never a stack trace. Most cases run in-process through main();
// a few spawn bin/guardian.mjs from a temporary cwd, as a user would.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, describeUnexpectedError, main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/cli/exit-codes.ts';
import { packageVersion } from '../../src/package-version.ts';
import { readBundle } from '../../src/rego/bundle/index.ts';
import { constantBundle } from '../lifecycle/fixtures.ts';

const BIN = fileURLToPath(new URL('../../bin/guardian.mjs', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
/** Nothing listens on port 1: a store behind it is "unavailable" at once (ECONNREFUSED). */
const UNREACHABLE_DB = 'postgres://postgres@127.0.0.1:1/guardian';

// Made at load time, not in beforeAll: the case tables below are built while the suite is collected.
const dir = mkdtempSync(join(tmpdir(), 'guardian-cli-errors-'));
const regoDir = join(dir, 'policies', 'nested');
mkdirSync(regoDir, { recursive: true });
const garbage = join(dir, 'garbage.tar.gz');
/** Paths the cases name. */
const f = {
  missing: join(dir, 'missing.tar.gz'),
  garbage,
  badJson: join(dir, 'bad.json'),
  // A path below a regular file cannot be created (ENOTDIR), whoever runs the test.
  unwritable: join(garbage, 'sub', 'out'),
  regoFile: join(regoDir, 'p.rego'),
  dataDir: join(dir, 'data'),
  /** A well-formed bundle (entrypoint acs/decision), written in beforeAll. */
  bundle: join(dir, 'valid.tar.gz'),
};
writeFileSync(f.garbage, 'this is not a gzip stream\n');
writeFileSync(f.badJson, '{"unterminated": ');
writeFileSync(f.regoFile, 'package p\n\nallow if input.n > 1\n\ntest_allow if allow with input as {"n": 2}\n');

beforeAll(async () => writeFileSync(f.bundle, await constantBundle('cli-errors')), 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * `guardian <args>` in this process: stdout/stderr captured, env overridden for the call. Runs one at a
 * time, because the capture and process.env are the process's.
 */
function inProcess(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const run = async (): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const write = { out: process.stdout.write, err: process.stderr.write };
    process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += String(chunk)), true)) as typeof write.out;
    process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += String(chunk)), true)) as typeof write.err;
    const fullEnv = { DATABASE_URL: UNREACHABLE_DB, GUARDIAN_KEY_DIR: undefined, GUARDIAN_DEBUG: undefined, ...env };
    const saved = Object.fromEntries(Object.keys(fullEnv).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(fullEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const exitCode = process.exitCode;
    process.exitCode = undefined;
    try {
      return { code: await main(['node', 'guardian', ...args]), stdout, stderr };
    } finally {
      process.stdout.write = write.out;
      process.stderr.write = write.err;
      process.exitCode = exitCode;
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  };
  const result = queue.then(run);
  queue = result.catch(() => undefined);
  return result;
}

/** `node bin/guardian.mjs <args>` in `cwd`, as a user runs it. */
function spawned(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { ...process.env, DATABASE_URL: UNREACHABLE_DB, ...env }, timeout: 300_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

/** A user error: the documented code, one `guardian: …` line on stderr, nothing on stdout, no stack. */
function expectUserError(r: Run, code: ExitCode, message?: RegExp): void {
  const context = `exit ${r.code}, stderr:\n${r.stderr}`;
  expect(r.code, context).toBe(code);
  expect(r.stderr, context).toMatch(/^guardian: [^\n]+\n$/);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stderr).not.toContain('internal error');
  expect(r.stdout).toBe('');
  if (message) expect(r.stderr).toMatch(message);
}

/** `policy build` for the `build` command of `policy` ('' for the program itself). */
function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function allCommands(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(allCommands)];
}

/** Placeholder values for a command's required arguments and mandatory options. */
function requiredArgs(cmd: Command): { positional: string[]; options: string[] } {
  return {
    positional: cmd.registeredArguments.filter((a) => a.required).map(() => 'x'),
    options: cmd.options.filter((o) => o.mandatory).flatMap((o) => [o.long ?? o.short ?? '', 'x']),
  };
}

interface Case {
  args: string[];
  code: ExitCode;
  env?: Record<string, string | undefined>;
  message?: RegExp;
}

/**
 * Per leaf command: its missing-file, malformed-input and unavailable-service cases (args after the command
 * path). Every leaf command must be listed, so a new command cannot be forgotten; `[]` says it reads no file
 * and needs no service, and why is in the comment.
 */
function casesByCommand(): Record<string, Case[]> {
  const pglite = { DATABASE_URL: '' };
  const dataDir = ['--data-dir', f.dataDir];
  return {
    serve: [
      { args: ['--port', '0', ...dataDir, '--bundle', f.missing], code: ExitCode.Usage, message: /no such file/ },
      { args: ['--port', '0', ...dataDir, '--bundle', f.garbage], code: ExitCode.Usage, env: pglite },
      { args: ['--port', '0', ...dataDir], code: ExitCode.Unavailable, message: /ECONNREFUSED/ },
      { args: ['--port', 'eighty'], code: ExitCode.Usage },
    ],
    'policy build': [
      { args: [f.missing, '-e', 'p/allow', '-o', join(dir, 'o.tar.gz')], code: ExitCode.Usage },
      { args: [f.regoFile, '-e', 'p/allow', '--data', f.badJson], code: ExitCode.Usage, message: /invalid JSON/ },
      { args: [f.regoFile], code: ExitCode.Usage, message: /no entrypoints: pass -e pkg\/rule or annotate/ },
      {
        args: [f.badJson, '-e', 'p/allow'],
        code: ExitCode.Usage,
        message: /1 error occurred during loading: .*bad\.json/,
      },
    ],
    'policy eval': [
      { args: ['-b', f.missing, '-e', 'p/allow'], code: ExitCode.Usage, message: /cannot read bundle/ },
      { args: ['-b', f.garbage, '-e', 'p/allow'], code: ExitCode.Usage, message: /not a bundle/ },
      { args: ['-b', f.bundle, '-e', 'acs/decision', '-i', f.missing], code: ExitCode.Usage },
      { args: ['-b', f.bundle, '-e', 'acs/decision', '-i', f.badJson], code: ExitCode.Usage, message: /invalid JSON/ },
      { args: ['-b', f.bundle, '-e', 'no/such'], code: ExitCode.Usage, message: /not in bundle/ },
      { args: [], code: ExitCode.Usage, message: /give a query, or -b bundle\.tar\.gz and -e pkg\/rule/ },
      {
        args: ['data.p.allow', '-d', f.missing],
        code: ExitCode.Usage,
        message: /1 error occurred during loading: stat .*missing\.tar\.gz: no such file or directory/,
      },
      // OPA's loader: the path, then Go's decoder error (go-json.ts).
      { args: ['data.p.allow', '-d', f.badJson], code: ExitCode.Usage, message: /bad\.json: unexpected EOF/ },
      { args: ['data.p.allow', '-d', regoDir, '-i', f.badJson], code: ExitCode.Usage, message: /invalid JSON/ },
      { args: ['data.p.allow', '-d', regoDir, '--ignore', '[x'], code: ExitCode.Usage, message: /--ignore: syntax/ },
    ],
    'policy inspect': [
      { args: ['-b', f.missing], code: ExitCode.Usage },
      { args: ['-b', f.garbage], code: ExitCode.Usage, message: /not a bundle/ },
    ],
    'policy test': [
      { args: [f.missing], code: ExitCode.Usage },
      { args: [f.regoFile, '--run', '('], code: ExitCode.Usage, message: /invalid regular expression/ },
      { args: [f.regoFile, '--coverage', '--format', 'xml'], code: ExitCode.Usage, message: /--format must be text/ },
      {
        args: [f.badJson],
        code: ExitCode.Usage,
        message: /1 error occurred during loading: .*bad\.json: unexpected EOF/,
      },
    ],
    'policy bench': [
      { args: ['-e', 'p/allow'], code: ExitCode.Usage, message: /give -b bundle\.tar\.gz or -d paths/ },
      { args: ['-e', 'p/allow', '-b', f.missing], code: ExitCode.Usage, message: /cannot read bundle/ },
      { args: ['-e', 'p/allow', '-b', f.garbage], code: ExitCode.Usage, message: /does not load/ },
      { args: ['-e', 'no/such', '-b', f.bundle], code: ExitCode.Usage, message: /not in bundle/ },
      { args: ['-e', 'acs/decision', '-b', f.bundle, '-i', f.badJson], code: ExitCode.Usage, message: /invalid JSON/ },
      { args: ['-e', 'p/allow', '-d', regoDir, '--benchtime', 'soon'], code: ExitCode.Usage, message: /--benchtime/ },
    ],
    'policy fmt': [
      { args: [f.missing], code: ExitCode.Usage, message: /1 error occurred during loading: stat / },
      { args: [regoDir, '--ignore', '[x'], code: ExitCode.Usage, message: /--ignore: syntax error/ },
      { args: [regoDir, '-w', '--check'], code: ExitCode.Usage, message: /-w cannot be combined/ },
      { args: [f.badJson], code: ExitCode.Usage, message: /no \.rego files found/ },
    ],
    'policy check': [
      { args: [f.missing], code: ExitCode.Usage },
      { args: [f.regoFile, '--format', 'xml'], code: ExitCode.Usage },
    ],
    // Reads nothing; its one file is the output.
    'policy capabilities': [{ args: ['-o', f.unwritable], code: ExitCode.Usage, message: /cannot write/ }],
    'bundle push': [
      { args: [f.missing], code: ExitCode.Usage },
      { args: [f.garbage, '--verification-key', f.missing], code: ExitCode.Usage },
      { args: [f.garbage], code: ExitCode.Unavailable },
      { args: [f.garbage, ...dataDir], code: ExitCode.Usage, env: pglite, message: /invalid_bundle/ },
    ],
    'bundle activate': [
      { args: ['v1'], code: ExitCode.Unavailable },
      { args: ['v404', ...dataDir], code: ExitCode.Failed, env: pglite, message: /not_found/ },
    ],
    'bundle rollback': [{ args: [], code: ExitCode.Unavailable }],
    'bundle list': [{ args: [], code: ExitCode.Unavailable }],
    'bundle shadow': [
      { args: ['--stop'], code: ExitCode.Unavailable },
      { args: [], code: ExitCode.Usage },
    ],
    'bundle sign': [
      { args: [f.missing, '--key', f.missing], code: ExitCode.Usage },
      { args: [f.garbage, '--key', f.missing], code: ExitCode.Usage },
      { args: [f.garbage, '--key', f.badJson, '-o', join(dir, 's.tar.gz')], code: ExitCode.Usage },
      { args: [f.bundle, '--key', f.badJson, '-o', join(dir, 's.tar.gz')], code: ExitCode.Usage, message: /key/ },
    ],
    'bundle verify': [
      { args: [f.missing], code: ExitCode.Usage },
      { args: [f.garbage], code: ExitCode.Usage, message: /not a bundle/ },
      { args: [f.garbage, '--verification-key', f.missing], code: ExitCode.Usage },
      // A well-formed bundle without a signature, where one is required: the refusal the command reports.
      { args: [f.bundle, '--verification-key', f.badJson], code: ExitCode.Failed, message: /signature_required/ },
    ],
    replay: [
      { args: ['--against', 'recorded'], code: ExitCode.Unavailable },
      { args: ['--against', f.missing, ...dataDir], code: ExitCode.Usage, env: pglite },
      { args: ['--against', 'recorded', '--format', 'pdf'], code: ExitCode.Usage },
    ],
    'db migrate': [{ args: [], code: ExitCode.Unavailable }],
    'db status': [{ args: [], code: ExitCode.Unavailable, message: /cannot open the store/ }],
    'audit verify': [
      { args: ['--all'], code: ExitCode.Unavailable },
      { args: ['--all', '--public-key', f.missing], code: ExitCode.Usage },
      { args: ['--all', '--public-key', f.badJson], code: ExitCode.Usage },
      { args: ['--all'], code: ExitCode.Unavailable, env: { GUARDIAN_HMAC_IKM: 'c2hvcnQ=' }, message: /HMAC IKM/ },
      { args: ['--session', 'nope', ...dataDir], code: ExitCode.Failed, env: pglite, message: /no chain/ },
      { args: [], code: ExitCode.Usage },
    ],
    'agbom export': [
      { args: ['--session', 's', '--format', 'pdf'], code: ExitCode.Usage, message: /--format must be one of/ },
      { args: ['--session', 's', '--at', 'latest'], code: ExitCode.Usage, message: /--at must be a chain entry seq/ },
      { args: ['--session', 's'], code: ExitCode.Unavailable },
      { args: ['--session', 'nope', ...dataDir], code: ExitCode.Failed, env: pglite, message: /no session nope/ },
    ],
    'agbom diff': [
      { args: ['--session', 's', '--from', '-1', '--to', '2'], code: ExitCode.Usage, message: /--from must be/ },
      { args: ['--session', 's', '--from', '0', '--to', '2'], code: ExitCode.Unavailable },
    ],
    'audit export': [
      { args: ['--session', 's', '-o', f.unwritable], code: ExitCode.Usage },
      { args: ['--session', 's'], code: ExitCode.Unavailable },
    ],
    'audit show': [
      { args: [], code: ExitCode.Unavailable },
      { args: ['--limit', 'all'], code: ExitCode.Usage },
    ],
    'audit prune': [
      { args: ['--before', '2020-01-01'], code: ExitCode.Unavailable },
      { args: ['--before', 'last tuesday'], code: ExitCode.Usage },
    ],
    'keys generate': [
      { args: ['--algorithm', 'HMAC-SHA256', '--out', f.unwritable], code: ExitCode.Usage },
      { args: ['--algorithm', 'ROT13', '--out', join(dir, 'keys')], code: ExitCode.Usage },
    ],
    'keys list': [
      { args: ['--dir', f.missing], code: ExitCode.Usage },
      { args: [], code: ExitCode.Usage, message: /GUARDIAN_KEY_DIR/ },
    ],
    'keys retire': [{ args: ['k', '--dir', f.missing], code: ExitCode.Usage }],
  };
}

describe('guardian: every command', async () => {
  const program = await buildProgram();
  const commands = allCommands(program);
  const leaves = commands.filter((c) => c.commands.length === 0);

  it('has cases for every leaf command, and the enumeration found the known groups', () => {
    expect(Object.keys(casesByCommand()).sort()).toEqual(leaves.map(pathOf).sort());
    expect(program.commands.map((c) => c.name()).sort()).toEqual(
      ['agbom', 'audit', 'bundle', 'db', 'keys', 'policy', 'replay', 'serve'].sort(),
    );
  });

  it.each(commands.map((c) => [pathOf(c) || '(program)', c] as const))(
    '%s --help exits 0 and prints its usage',
    async (_name, cmd) => {
      const words = pathOf(cmd) ? pathOf(cmd).split(' ') : [];
      const r = await inProcess([...words, '--help']);
      expect(r.code).toBe(ExitCode.Ok);
      expect(r.stdout).toContain(`Usage: ${['guardian', ...words].join(' ')} `);
      expect(r.stderr).toBe('');
    },
  );

  it.each(commands.map((c) => [pathOf(c) || '(program)', c] as const))(
    '%s with an unknown flag: exit 2, one line naming the flag and the help command',
    async (_name, cmd) => {
      const words = pathOf(cmd) ? pathOf(cmd).split(' ') : [];
      const { positional, options } = requiredArgs(cmd);
      const r = await inProcess([...words, ...positional, ...options, '--no-such-flag']);
      const help = ['guardian', ...words, '--help'].join(' ');
      expectUserError(r, ExitCode.Usage, new RegExp(`unknown option '--no-such-flag'; run '${help}' for usage`));
    },
  );

  const withRequired = leaves.filter((c) => {
    const { positional, options } = requiredArgs(c);
    return positional.length > 0 || options.length > 0;
  });
  it('finds commands with required arguments and options', () => {
    expect(withRequired.map(pathOf)).toEqual(expect.arrayContaining(['policy build', 'keys retire', 'audit prune']));
  });

  it.each(withRequired.map((c) => [pathOf(c), c] as const))(
    '%s without its required arguments / options: exit 2, one line',
    async (name, cmd) => {
      const { positional, options } = requiredArgs(cmd);
      if (positional.length > 0) {
        const r = await inProcess([...name.split(' '), ...options]);
        expectUserError(r, ExitCode.Usage, /missing required argument/);
      }
      if (options.length > 0) {
        const r = await inProcess([...name.split(' '), ...positional]);
        expectUserError(r, ExitCode.Usage, /required option '.+' not specified/);
      }
    },
  );

  it.each(Object.entries(casesByCommand()).flatMap(([name, cases]) => cases.map((c) => [name, c.args, c] as const)))(
    '%s %j: documented exit code, one line',
    async (name, args, c) => {
      const r = await inProcess([...name.split(' '), ...args], c.env);
      expectUserError(r, c.code, c.message);
    },
    60_000,
  );

  it('an unknown command: exit 2, one line with a suggestion', async () => {
    expectUserError(await inProcess(['polcy']), ExitCode.Usage, /unknown command 'polcy' \(Did you mean policy\?\)/);
    expectUserError(await inProcess(['policy', 'buidl']), ExitCode.Usage, /Did you mean build\?/);
  });
});

describe('guardian --version', () => {
  it('--version and -V print the version of package.json', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await inProcess([flag]);
      expect(r).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    }
  });

  it('is found from a compiled layout one level deeper, skipping a package.json that is not acs-guardian', () => {
    const root = join(dir, 'installed');
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'acs-guardian', version: '9.8.7' }));
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    const module = pathToFileURL(join(root, 'dist', 'cli', 'package-version.js')).href;
    expect(packageVersion(module)).toBe('9.8.7');
  });
});

describe('an internal error (a bug)', () => {
  const bug = new TypeError("Cannot read properties of undefined (reading 'x')");

  it('is one line with a hint; the stack only with GUARDIAN_DEBUG=1', () => {
    const plain = describeUnexpectedError(bug, {});
    expect(plain).toMatch(/^guardian: internal error: TypeError: Cannot read .* \(a bug; set GUARDIAN_DEBUG=1 .*\)\n$/);
    expect(plain).not.toMatch(/^\s+at /m);
    const debug = describeUnexpectedError(bug, { GUARDIAN_DEBUG: '1' });
    expect(debug).toMatch(/^guardian: internal error: TypeError: Cannot read/);
    expect(debug).toMatch(/^\s+at /m);
  });

  it('a file-system or network error from Node is not called a bug', () => {
    const enoent = Object.assign(new Error("ENOENT: no such file or directory, open '/x'"), { code: 'ENOENT' });
    expect(describeUnexpectedError(enoent, {})).toBe("guardian: ENOENT: no such file or directory, open '/x'\n");
  });
});

/** Runs `body` (an ES module using `withCrashReport` from src/cli/main.ts) in a child node with tsx (resolved from the repository root). */
function crashingChild(body: string, env: Record<string, string> = {}): Promise<Run> {
  const mainUrl = new URL('../../src/cli/main.ts', import.meta.url).href;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', `import { withCrashReport } from '${mainUrl}';\n${body}`],
      {
        cwd: fileURLToPath(new URL('../../', import.meta.url)),
        env: { ...process.env, GUARDIAN_DEBUG: '', ...env },
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe('an error thrown outside the command promise', () => {
  const thrownByTimer =
    "await withCrashReport(() => new Promise(() => setTimeout(() => { throw new TypeError('boom'); }, 10)));";

  it('a bug in a timer or emitter: exit 70, one line; the stack with GUARDIAN_DEBUG=1', async () => {
    const [plain, debug, enoent] = await Promise.all([
      crashingChild(thrownByTimer),
      crashingChild(thrownByTimer, { GUARDIAN_DEBUG: '1' }),
      // An emitter 'error' nobody listens to, as a write stream to a missing directory raises it.
      crashingChild(
        "import { createWriteStream } from 'node:fs';\n" +
          "await withCrashReport(() => new Promise(() => createWriteStream('/no/such/dir/out')));",
      ),
    ]);
    expect(plain.code).toBe(ExitCode.Internal);
    expect(plain.stderr).toMatch(
      /^guardian: internal error: TypeError: boom \(a bug; set GUARDIAN_DEBUG=1 [^\n]*\)\n$/,
    );
    expect(debug.code).toBe(ExitCode.Internal);
    expect(debug.stderr).toMatch(/^\s+at /m);
    expectUserError(enoent, ExitCode.Usage, /ENOENT: no such file or directory, open '\/no\/such\/dir\/out'/);
  }, 120_000);
});

describe('bin/guardian.mjs from another directory', () => {
  it('builds, checks and tests files named by absolute and relative paths; errors stay one line', async () => {
    const cwd = join(dir, 'elsewhere');
    mkdirSync(cwd, { recursive: true });
    const other = join(dir, 'policies', 'q.rego');
    writeFileSync(other, 'package q\n\nx := 1\n');
    const out = join(dir, 'from-elsewhere.tar.gz');
    // Four at a time at most: each spawn is a node + tsx start.
    const [version, build, check, test] = await Promise.all([
      spawned(['-V'], cwd),
      spawned(['policy', 'build', f.regoFile, '../policies/q.rego', '-e', 'p/allow', '-o', out, '-q'], cwd),
      spawned(['policy', 'check', f.regoFile, '../policies/q.rego'], cwd),
      spawned(['policy', 'test', '../policies/nested/p.rego'], cwd),
    ]);
    expect(version).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect(build.stderr).toBe('');
    expect(build.code).toBe(0);
    // Bundle paths are relative to the files' common directory (policies/), whatever the cwd.
    const bundle = readBundle(new Uint8Array(readFileSync(out)));
    expect(bundle.sources.map((s) => s.path).sort()).toEqual(['/nested/p.rego', '/q.rego']);
    expect(check.code).toBe(0);
    expect(check.stderr).toMatch(/2 modules checked: 0 errors/);
    expect(test.code).toBe(0);
    expect(test.stdout).toBe('PASS: 1/1\n');

    const [flag, missing, down] = await Promise.all([
      spawned(['policy', 'build', '--no-such-flag'], cwd),
      spawned(['policy', 'build', join(dir, 'nope.rego'), '-e', 'p/allow'], cwd),
      spawned(['db', 'status'], cwd),
    ]);
    expectUserError(flag, ExitCode.Usage, /unknown option '--no-such-flag'/);
    expectUserError(missing, ExitCode.Usage, /no such file or directory/);
    expectUserError(down, ExitCode.Unavailable, /cannot open the store/);
  }, 300_000);

  it('a compile error names the file as typed: exit 3', async () => {
    const cwd = join(dir, 'elsewhere');
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(dir, 'policies', 'bad.rego'), 'package bad\n\nallow if {\n  y == 1\n}\n');
    const r = await spawned(['policy', 'build', '../policies/bad.rego', '-e', 'bad/allow', '-q'], cwd);
    expect(r.code).toBe(ExitCode.CompileError);
    expect(r.stderr).toMatch(/^\.\.\/policies\/bad\.rego:4:\d+: rego_unsafe_var_error: var y is unsafe$/m);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  }, 300_000);
});

describe('a reader that stops early', () => {
  it('`guardian policy capabilities | head -c 1`: the output ends, exit 0, nothing on stderr', async () => {
    // A shell pipe, as a user types it: `head` exits after one byte while the command still has output to write.
    const script = `"$0" "$1" policy capabilities | head -c 1 >/dev/null; echo "exit \${PIPESTATUS[0]}" >&2`;
    const r = await new Promise<{ stderr: string }>((resolve) => {
      execFile('bash', ['-c', script, process.execPath, BIN], { timeout: 120_000 }, (_err, _stdout, stderr) =>
        resolve({ stderr }),
      );
    });
    expect(r.stderr).toBe('exit 0\n');
  }, 120_000);
});
