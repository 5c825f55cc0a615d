// `guardian policy test` through commander, in-process: output, exit codes, option validation.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { addPolicyTestCommand } from '../../../src/cli/commands/policy-test.ts';
import { CliError, ExitCode } from '../../../src/cli/exit-codes.ts';

function program(): Command {
  const root = new Command().exitOverride();
  addPolicyTestCommand(root.command('policy').exitOverride());
  return root;
}

async function run(args: string[]): Promise<{ out: string; exitCode: number | undefined; error?: unknown }> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  process.exitCode = undefined;
  let error: unknown;
  try {
    await program().parseAsync(['node', 'guardian', 'policy', 'test', ...args]);
  } catch (err) {
    error = err;
  } finally {
    spy.mockRestore();
  }
  const exitCode = process.exitCode as number | undefined;
  process.exitCode = undefined;
  return { out, exitCode, error };
}

describe('guardian policy test', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  function fixture(files: Record<string, string>): string {
    const d = mkdtempSync(join(tmpdir(), 'policy-cli-'));
    dirs.push(d);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
    return d;
  }

  it("prints the failures under their file, ends with opa test's counts and exits 1", async () => {
    const d = fixture({ 'a_test.rego': 'package a\n\ntest_ok if true\n\ntest_bad if false\n' });
    const r = await run([d]);
    expect(r.error).toBeUndefined();
    expect(r.exitCode).toBe(ExitCode.Failed);
    expect(r.out.replace(/\(.*\)/, '(D)')).toBe(
      `${join(d, 'a_test.rego')}:\ndata.a.test_bad: FAIL (D)\n${'-'.repeat(80)}\nPASS: 1/2\nFAIL: 1/2\n`,
    );
  });

  it("keeps each test's print output with it: shown under a failed test, and under every test with -v", async () => {
    const d = fixture({
      'p_test.rego': [
        'package p',
        '',
        'test_quiet if {',
        '\tprint("from the passing test")',
        '}',
        '',
        'test_loud if {',
        '\tprint("x is", 1)',
        // A trace() note is an event of OPA's trace, never part of the test's output.
        '\ttrace("a note")',
        '\tfalse',
        '}',
        '',
      ].join('\n'),
    });
    let stderr = '';
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    });
    try {
      const r = await run([d]);
      expect(r.exitCode).toBe(ExitCode.Failed);
      const lines = r.out.split('\n');
      const fail = lines.findIndex((l) => l.startsWith('data.p.test_loud: FAIL ('));
      expect(lines.slice(fail + 1, fail + 4)).toEqual(['', '  x is 1', '']);
      // a passing test's output is not shown without -v, and nothing goes to stderr as it happens
      expect(r.out).not.toContain('from the passing test');
      expect(r.out).not.toContain('a note');
      const verbose = await run([d, '-v']);
      const vlines = verbose.out.split('\n');
      const pass = vlines.findIndex((l) => l.startsWith('data.p.test_quiet: PASS ('));
      expect(vlines.slice(pass + 1, pass + 4)).toEqual(['', '  from the passing test', '']);
      expect(verbose.out).not.toContain('a note');
      expect(stderr).toBe('');
    } finally {
      err.mockRestore();
    }
  });

  it('exits 0 when everything passes and lists passes with -v', async () => {
    const d = fixture({ 'a_test.rego': 'package a\n\ntest_ok if true\n' });
    const r = await run([d, '-v']);
    expect(r.exitCode ?? 0).toBe(0);
    expect(r.out).toContain('data.a.test_ok: PASS (');
    expect(r.out.split('\n').at(-2)).toBe('PASS: 1/1');
  });

  it('reports compile errors with the compile-error exit code, and bad --run as usage', async () => {
    const d = fixture({ 'a_test.rego': 'package a\n\ntest_x if { y }\n' });
    const r = await run([d]);
    expect(r.error).toBeInstanceOf(CliError);
    expect((r.error as CliError).exitCode).toBe(ExitCode.CompileError);
    expect((r.error as CliError).message).toMatch(/a_test\.rego:3:\d+/);
    const u = await run([d, '--run', '(']);
    expect((u.error as CliError).exitCode).toBe(ExitCode.Usage);
  });
});
