// stdio transport: a real child process (`node bin/guardian.mjs serve --stdio`) speaking Content-Length framed
// JSON-RPC; plus the frame parser on its own (split frames, broken headers, oversize frames).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { encodeFrame, FrameParser } from '../../src/server/stdio.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { expectValidAnswer, TEST_IKM } from '../acs/fixtures/harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Reads Content-Length frames from the child's stdout, in order. */
class FrameReader {
  readonly #parser = new FrameParser(64 * 1024 * 1024);
  readonly #queue: string[] = [];
  readonly #waiters: ((s: string) => void)[] = [];
  constructor(child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (chunk: Buffer) => {
      for (const ev of this.#parser.push(chunk)) {
        if (ev.kind !== 'message') throw new Error('guardian wrote a broken frame');
        const text = ev.body.toString('utf8');
        const w = this.#waiters.shift();
        if (w) w(text);
        else this.#queue.push(text);
      }
    });
  }
  next(): Promise<string> {
    const q = this.#queue.shift();
    return q !== undefined ? Promise.resolve(q) : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

let dir: string;
let child: ChildProcessWithoutNullStreams;
let reader: FrameReader;
let stderr = '';
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-stdio-'));
  const wasm = await buildDecisionModule({ constant: { decision: 'deny', reasoning: 'stdio fixture denies' } });
  writeFileSync(join(dir, 'policy.wasm'), wasm);
  child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/guardian.mjs'),
      'serve',
      '--stdio',
      '--data-dir',
      join(dir, 'data'),
      '--bundle',
      join(dir, 'policy.wasm'),
    ],
    {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: '', GUARDIAN_HMAC_IKM: Buffer.from(TEST_IKM).toString('base64') },
    },
  );
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  reader = new FrameReader(child);
  // Start-up (tsx transform of the CLI, PGlite initdb) takes tens of seconds on a loaded 2-core machine.
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (stderr.includes('serving ACS on stdio')) resolve();
    };
    child.stderr.on('data', check);
    child.once('exit', (code) => reject(new Error(`guardian exited with ${code}: ${stderr}`)));
    check();
  });
}, 300_000);
afterAll(async () => {
  if (child.exitCode === null) {
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
  }
  rmSync(dir, { recursive: true, force: true });
});

const stdioTransport = async (message: string): Promise<string> => {
  child.stdin.write(encodeFrame(JSON.parse(message)));
  const answer = await reader.next();
  expectValidAnswer(JSON.parse(answer));
  return answer;
};

describe('guardian serve --stdio (child process)', () => {
  it('handshakes with selected_transport "stdio", answers signed decisions with chain heads, and pings', async () => {
    const c = new AcsClient({ transport: stdioTransport, ikm: TEST_IKM, agentId: 'stdio-agent' });
    const hello = await c.hello({ transports_supported: ['stdio'], methods_implemented: ['steps/toolCallRequest'] });
    expect(hello.selected_transport).toBe('stdio');
    const out = await c.step('steps/toolCallRequest', {
      tool: { name: 'Bash' },
      arguments: { command: { value: 'rm -rf /' } },
    });
    expect(out.failure).toBeUndefined();
    expect(out.decision).toBe('deny');
    expect(out.result?.reasoning).toBe('stdio fixture denies');
    expect(out.result?.chain_hash).toBe(c.chainHash);
    expect((await c.ping('x')).payload).toMatchObject({ status: 'ok', echo: 'x' });
    expect(stderr).toMatch(/serving ACS on stdio/);
    expect(stderr).not.toContain(Buffer.from(TEST_IKM).toString('base64'));
  });

  it('answers broken framing with -32700 and keeps going; an HTTP-only hello over stdio is refused', async () => {
    child.stdin.write('Content-Type: application/json\r\n\r\n');
    const broken = JSON.parse(await reader.next());
    expect(broken.error.code).toBe(-32700);
    expect(broken.error.data.reason).toBe('framing_invalid');
    child.stdin.write('Content-Length: 5\r\n\r\n{"a":');
    expect(JSON.parse(await reader.next()).error.code).toBe(-32700);
    const c = new AcsClient({ transport: stdioTransport, ikm: TEST_IKM, agentId: 'stdio-agent' });
    await expect(c.hello({ transports_supported: ['http'] })).rejects.toMatchObject({
      error: { code: -32000, data: { reason: 'no_common_transport' } },
    });
  });
});

describe('FrameParser', () => {
  it('reassembles frames split at any byte, skips oversize frames, resynchronises after a bad header', () => {
    const frames = Buffer.concat([
      encodeFrame({ a: 1 }),
      Buffer.from('X-Junk: 1\r\n\r\n'),
      encodeFrame({ b: 'é' }),
      Buffer.from('Content-Length: 50\r\n\r\n' + 'z'.repeat(50)),
      encodeFrame({ c: 3 }),
    ]);
    for (let split = 1; split < frames.length; split += 7) {
      const p = new FrameParser(40);
      const events = [...p.push(frames.subarray(0, split)), ...p.push(frames.subarray(split))];
      expect(events.map((e) => (e.kind === 'message' ? JSON.parse(e.body.toString('utf8')) : e.kind))).toEqual([
        { a: 1 },
        'framing_error',
        { b: 'é' },
        'oversize',
        { c: 3 },
      ]);
    }
  });
});
