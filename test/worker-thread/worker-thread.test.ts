// src/worker-thread against a real worker thread (fixtures/echo-worker.ts, started through tsx since this
// run is TypeScript): answers by id, notifications in order, errors with their name and code, transfers,
// crashes and terminate() failing what is pending.
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerCrashedError, WorkerRemoteError, WorkerThread } from '../../src/worker-thread/index.ts';
import type { EchoProtocol } from './fixtures/echo-worker.ts';

const ENTRY = new URL('./fixtures/echo-worker.ts', import.meta.url);
const started: WorkerThread<EchoProtocol>[] = [];

function start(onCrash?: (e: WorkerCrashedError) => void): WorkerThread<EchoProtocol> {
  const t = new WorkerThread<EchoProtocol>(ENTRY, { name: 'echo worker', ...(onCrash ? { onCrash } : {}) });
  started.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.terminate()));
});

describe('WorkerThread', () => {
  it('answers each request by its id, and handles notifications in arrival order', async () => {
    const t = start();
    const answers = await Promise.all(['a', 'b', 'c'].map((text) => t.request('echo', { text })));
    expect(answers).toEqual([{ text: 'A' }, { text: 'B' }, { text: 'C' }]);
    for (const value of [0, 1, 2]) t.notify('remember', { value });
    expect(await t.request('recall', null)).toEqual([0, 1, 2]);
    expect(t.pending).toBe(0);
  });

  it("rejects with the handler's error (name, message, code) and keeps serving", async () => {
    const t = start();
    const err = await t.request('fail', { code: 'not_allowed' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerRemoteError);
    expect(err).toMatchObject({ name: 'CodedError', message: 'refused with not_allowed', code: 'not_allowed' });
    expect(await t.request('echo', { text: 'still here' })).toEqual({ text: 'STILL HERE' });
  });

  it('moves transferred buffers to the parent', async () => {
    const bytes = await start().request('bytes', { length: 1024 });
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.length).toBe(1024);
    expect(bytes.every((b) => b === 7)).toBe(true);
  });

  it('a worker that exits fails every pending request, reports the crash once, and refuses new requests', async () => {
    const crashes: WorkerCrashedError[] = [];
    const t = start((e) => crashes.push(e));
    await t.request('echo', { text: 'warm' });
    // Handled in order: the exit runs first, so the request queued behind it is pending when the thread dies.
    const settled = await Promise.allSettled([t.request('exit', { code: 5 }), t.request('echo', { text: 'lost' })]);
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(WorkerCrashedError);
      expect(String((s as PromiseRejectedResult).reason)).toMatch(/echo worker exited with code 5/);
    }
    expect(crashes).toHaveLength(1);
    expect(crashes[0].exitCode).toBe(5);
    expect(t.failure).toBe(crashes[0]);
    await expect(t.request('echo', { text: 'late' })).rejects.toBe(crashes[0]);
    expect(() => t.notify('remember', { value: 1 })).toThrow(/exited with code 5/);
  });

  it('terminate() rejects pending requests with the given reason and is not reported as a crash', async () => {
    const crashes: WorkerCrashedError[] = [];
    const t = start((e) => crashes.push(e));
    await t.request('echo', { text: 'warm' });
    const hanging = t.request('hang', null).then(
      () => null,
      (e: unknown) => e,
    );
    const reason = new Error('shutting down');
    await t.terminate(reason);
    expect(await hanging).toBe(reason);
    expect(crashes).toEqual([]);
    expect(t.failure).toBe(reason);
  });
});
