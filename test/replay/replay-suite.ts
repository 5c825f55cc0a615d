// The replay suite, run on PGlite and on Postgres: history recorded under v1 through the real Guardian (HTTP
// server + SDK client), replayed against v2 (registry, file, directory), against v1 and against the recorded
// revisions, with selections, tampering, a time-dependent policy, and a check that nothing was written.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeRequestHash } from '../../src/chain/index.ts';
import { createWasmPolicyEngine } from '../../src/policy/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { resolveReplayPolicy, runReplay, type ReplayReport, type ReplayStep } from '../../src/replay/index.ts';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import {
  buildPolicyVersions,
  engineOf,
  IKM,
  registerBundle,
  startRecorder,
  storeSnapshot,
  type PolicyVersions,
  type Recorder,
} from './fixtures.ts';

interface Recorded {
  /** session id → [method, recorded decision][] in chain order */
  a: string;
  b: string;
  morning: string;
  afternoon: string;
}

const SHELL = (command: string): Record<string, unknown> => ({
  tool: { name: 'shell' },
  arguments: { command: { value: command } },
});
const SEARCH = (query: string): Record<string, unknown> => ({
  tool: { name: 'web_search' },
  arguments: { query: { value: query } },
});
const METHODS = ['steps/sessionStart', 'steps/toolCallRequest', 'steps/userMessage', 'steps/sessionEnd'];

function byKey(report: ReplayReport): Map<string, ReplayStep> {
  return new Map(report.steps.map((s) => [`${s.sessionId}#${s.seq}`, s]));
}

export function defineReplaySuite(name: string, open: () => Promise<DurableStore>): void {
  describe(`replay (${name})`, () => {
    let store: DurableStore;
    let versions: PolicyVersions;
    let recorder: Recorder;
    let rec: Recorded;
    let tmp: string;

    beforeAll(async () => {
      store = await open();
      versions = await buildPolicyVersions();
      await registerBundle(store, versions.v1, 'v1');
      await registerBundle(store, versions.v2, 'v2');
      tmp = mkdtempSync(join(tmpdir(), 'replay-test-'));
      writeFileSync(join(tmp, 'v2.tar.gz'), versions.v2);
      writeFileSync(join(tmp, 'v1.tar.gz'), versions.v1);
      recorder = await startRecorder(store, await engineOf(versions.v1));

      const a = recorder.client('agent-a');
      await a.hello({ methods_implemented: METHODS });
      expect((await a.step('steps/sessionStart', {})).decision).toBe('allow');
      expect((await a.step('steps/toolCallRequest', SHELL('git push --force origin main'))).decision).toBe('deny');
      expect((await a.step('steps/toolCallRequest', SEARCH('weather in Lyon'))).decision).toBe('allow');
      expect((await a.step('steps/toolCallRequest', SHELL('ls -la'))).decision).toBe('allow');

      const b = recorder.client('agent-b');
      await b.hello({ methods_implemented: METHODS });
      expect((await b.step('steps/sessionStart', {})).decision).toBe('allow');
      expect((await b.step('steps/toolCallRequest', SEARCH('acs spec'))).decision).toBe('allow');
      expect((await b.step('steps/toolCallRequest', SHELL('rm -rf /'))).decision).toBe('deny');
      expect((await b.step('steps/sessionEnd', {})).decision).toBe('allow');

      // Two sessions at chosen times for the time-dependent policy (Guardian and client share the clock).
      recorder.clock.now = new Date('2026-03-02T09:15:00Z');
      const m = recorder.client('agent-clock');
      await m.hello({ methods_implemented: METHODS });
      await m.step('steps/sessionStart', {});
      await m.step('steps/toolCallRequest', SHELL('ls'));
      recorder.clock.now = new Date('2026-03-02T15:45:00Z');
      const n = recorder.client('agent-clock');
      await n.hello({ methods_implemented: METHODS });
      await n.step('steps/sessionStart', {});
      await n.step('steps/toolCallRequest', SHELL('ls'));
      recorder.clock.now = new Date();
      rec = { a: a.sessionId, b: b.sessionId, morning: m.sessionId, afternoon: n.sessionId };
    }, 240_000);

    afterAll(async () => {
      await recorder?.close();
      await store?.close();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
      if (versions) rmSync(versions.v2Dir, { recursive: true, force: true });
    });

    function expectV2Transitions(report: ReplayReport, revision = 'v2'): void {
      const s = report.summary;
      expect(s.sessions).toBe(2);
      expect(s.compared).toBe(8);
      expect(s.tampered).toBe(0);
      expect(s.changed).toBe(3);
      expect(s.transitions).toEqual({ 'allow→allow': 4, 'allow→deny': 2, 'deny→allow': 1, 'deny→deny': 1 });
      expect(s.rules['baseline.tool_denylist']).toEqual({ added: 2, removed: 0 });
      expect(s.rules['baseline.destructive_shell']).toEqual({ added: 0, removed: 1 });
      expect(s.reasonCodes.tool_denied).toEqual({ added: 2, removed: 0 });
      expect(s.reasonCodes.destructive_shell_command_blocked).toEqual({ added: 0, removed: 1 });
      expect(s.nondeterministic).toBe(0);
      const steps = byKey(report);
      // Session A: seq 1 = git push --force (loosened), seq 2 = web_search (tightened).
      expect(steps.get(`${rec.a}#1`)?.delta?.transition).toBe('deny→allow');
      expect(steps.get(`${rec.a}#1`)?.delta?.rulesRemoved).toEqual(['baseline.destructive_shell']);
      expect(steps.get(`${rec.a}#2`)?.delta?.transition).toBe('allow→deny');
      expect(steps.get(`${rec.a}#2`)?.delta?.rulesAdded).toEqual(['baseline.tool_denylist']);
      expect(steps.get(`${rec.a}#2`)?.recordedRevision).toBe('v1');
      expect(steps.get(`${rec.a}#2`)?.replayedRevision).toBe(revision);
      expect(report.summary.revisions).toEqual([revision]);
      expect(steps.get(`${rec.b}#1`)?.delta?.transition).toBe('allow→deny');
      expect(steps.has(`${rec.b}#2`)).toBe(false);
    }

    const ab = (): { sessionIds: string[] } => ({ sessionIds: [rec.a, rec.b] });

    it('v2 from the registry: exactly the tightened and loosened transitions, with the rules named', async () => {
      const policy = await resolveReplayPolicy(store, 'v2');
      expect(policy.description).toContain('registry revision v2');
      expectV2Transitions(await runReplay({ store, policy, selection: ab() }));
    }, 120_000);

    it('v2 as a bundle file and as Rego sources compiled on the fly: the same transitions', async () => {
      const file = await resolveReplayPolicy(store, join(tmp, 'v2.tar.gz'), { allowPaths: true });
      expectV2Transitions(await runReplay({ store, policy: file, selection: ab() }));
      const dir = await resolveReplayPolicy(store, versions.v2Dir, { allowPaths: true });
      expect(dir.description).toContain('Rego directory');
      // Compiled without a manifest revision: the engine names it by content hash.
      const [compiled] = dir.revisions();
      expect(compiled).toMatch(/^[0-9a-f]{64}$|^sha256:/);
      expectV2Transitions(await runReplay({ store, policy: dir, selection: ab() }), compiled);
    }, 180_000);

    it('paths are refused unless allowed; unknown revisions are precise errors', async () => {
      await expect(resolveReplayPolicy(store, join(tmp, 'v2.tar.gz'))).rejects.toMatchObject({
        code: 'policy_path_refused',
      });
      await expect(resolveReplayPolicy(store, 'no-such-revision')).rejects.toMatchObject({ code: 'policy_not_found' });
      writeFileSync(join(tmp, 'broken.tar.gz'), 'not a bundle');
      await expect(resolveReplayPolicy(store, join(tmp, 'broken.tar.gz'), { allowPaths: true })).rejects.toMatchObject({
        code: 'policy_invalid',
      });
    });

    it('against v1 (file) and against the recorded revisions: every decision reproduced', async () => {
      const v1 = await runReplay({
        store,
        policy: await resolveReplayPolicy(store, join(tmp, 'v1.tar.gz'), { allowPaths: true }),
        reportUnchanged: true,
      });
      expect(v1.summary.compared).toBe(12);
      expect(v1.summary.changed).toBe(0);
      expect(v1.steps.every((s) => s.delta?.changed === false && s.replayed?.decision === s.recorded?.decision)).toBe(
        true,
      );
      const recorded = await runReplay({ store, policy: await resolveReplayPolicy(store, 'recorded') });
      expect(recorded.summary.determinismCheck).toBe(true);
      expect(recorded.summary.revisions).toEqual(['v1']);
      expect(recorded.summary.compared).toBe(12);
      expect(recorded.summary.changed).toBe(0);
      expect(recorded.summary.nondeterministic).toBe(0);
    }, 120_000);

    it('a policy that disagrees with the recorded revision is reported as non-determinism with its step', async () => {
      // An engine claiming to be v1 but deciding as v2: what a non-deterministic policy looks like to replay.
      const v2AsV1 = await createWasmPolicyEngine({ bundle: versions.v2, revision: 'v1' });
      const report = await runReplay({
        store,
        policy: await resolveReplayPolicy(store, v2AsV1),
        selection: { sessionIds: [rec.a] },
      });
      expect(report.summary.nondeterministic).toBe(2);
      expect(report.steps.filter((s) => s.nondeterministic).map((s) => s.seq)).toEqual([1, 2]);
    }, 120_000);

    it('selections: agent, method, recorded decision, decided-by, time range', async () => {
      const v2 = await resolveReplayPolicy(store, 'v2');
      const agent = await runReplay({ store, policy: v2, selection: { agentId: 'agent-b' } });
      expect(agent.summary.sessions).toBe(1);
      expect(agent.summary.compared).toBe(4);
      expect(agent.summary.transitions).toEqual({ 'allow→allow': 2, 'allow→deny': 1, 'deny→deny': 1 });

      const denied = await runReplay({ store, policy: v2, selection: { ...ab(), decisions: ['deny'] } });
      expect(denied.summary.compared).toBe(2);
      expect(denied.summary.transitions).toEqual({ 'deny→allow': 1, 'deny→deny': 1 });

      const tools = await runReplay({ store, policy: v2, selection: { ...ab(), methods: ['steps/toolCallRequest'] } });
      expect(tools.summary.compared).toBe(5);
      // Unselected steps are still evaluated: state is rebuilt from the whole chain.
      expect(tools.summary.entriesEvaluated).toBe(8);

      const decidedBy = await runReplay({ store, policy: v2, selection: { decidedBy: 'v1' } });
      expect(decidedBy.summary.compared).toBe(12);
      const none = await runReplay({ store, policy: v2, selection: { decidedBy: 'v0' } });
      expect(none.summary.compared).toBe(0);

      const morning = await runReplay({
        store,
        policy: v2,
        selection: { since: new Date('2026-03-02T09:00:00Z'), until: new Date('2026-03-02T12:00:00Z') },
      });
      expect(morning.summary.compared).toBe(2);
      await expect(
        runReplay({ store, policy: v2, selection: { since: new Date('2026-03-03'), until: new Date('2026-03-02') } }),
      ).rejects.toMatchObject({ code: 'invalid_selection' });
    }, 180_000);

    it('time-dependent builtins see the recorded timestamp', async () => {
      const dir = mkdtempSync(join(tmp, 'clock-'));
      writeFileSync(
        join(dir, 'clock.rego'),
        `package acs

hour := time.clock(time.now_ns())[0]

default decision := {"decision": "allow", "reasoning": "before noon"}

decision := {
	"decision": "deny",
	"reasoning": "no tool calls after noon",
	"reason_codes": ["after_noon"],
	"policy_references": [{"policy_id": "clock", "rule_id": "clock.after_noon"}],
} if {
	input.method == "steps/toolCallRequest"
	hour >= 12
}
`,
      );
      const policy = await resolveReplayPolicy(store, dir, { allowPaths: true });
      const report = await runReplay({
        store,
        policy,
        selection: { sessionIds: [rec.morning, rec.afternoon], methods: ['steps/toolCallRequest'] },
        reportUnchanged: true,
      });
      const steps = byKey(report);
      expect(steps.get(`${rec.morning}#1`)?.replayed?.decision).toBe('allow');
      expect(steps.get(`${rec.afternoon}#1`)?.replayed?.decision).toBe('deny');
      expect(steps.get(`${rec.afternoon}#1`)?.delta?.rulesAdded).toEqual(['clock.after_noon']);
      expect(report.summary.transitions).toEqual({ 'allow→allow': 1, 'allow→deny': 1 });
    }, 120_000);

    it('tampered stored params: the entry is flagged and skipped, replay continues; nothing is written', async () => {
      const before = await storeSnapshot(store);
      const [row] = await store.query('select params_jcs from context_entries where session_id = $1 and seq = 1', [
        rec.b,
      ]);
      const original = String(row.params_jcs);
      const edited = original.replace('acs spec', 'acs spek');
      expect(edited).not.toBe(original);
      await store.query('update context_entries set params_jcs = $1 where session_id = $2 and seq = 1', [
        edited,
        rec.b,
      ]);
      try {
        const seen: ReplayStep[] = [];
        const report = await runReplay({
          store,
          policy: await resolveReplayPolicy(store, 'recorded'),
          onStep: (s) => seen.push(s),
        });
        expect(report.summary.tampered).toBe(1);
        expect(report.summary.compared).toBe(11);
        expect(report.summary.changed).toBe(0);
        const flagged = report.steps.filter((s) => s.status === 'tampered');
        expect(flagged).toHaveLength(1);
        expect(flagged[0]).toMatchObject({
          sessionId: rec.b,
          seq: 1,
          tamper: 'request_hash_mismatch',
          method: 'steps/toolCallRequest',
        });
        // The steps after it in the same session were still replayed and compared.
        expect(seen.filter((s) => s.sessionId === rec.b && s.status === 'compared').map((s) => s.seq)).toEqual([
          0, 2, 3,
        ]);
        expect(computeRequestHash(JSON.parse(edited))).not.toBe(computeRequestHash(JSON.parse(original)));
      } finally {
        await store.query('update context_entries set params_jcs = $1 where session_id = $2 and seq = 1', [
          original,
          rec.b,
        ]);
      }
      expect(await storeSnapshot(store)).toBe(before);
    }, 120_000);

    it('a tampered entry (content) is flagged as an entry_hash mismatch', async () => {
      const [row] = await store.query('select content_jcs from context_entries where session_id = $1 and seq = 2', [
        rec.a,
      ]);
      const original = String(row.content_jcs);
      await store.query('update context_entries set content_jcs = $1 where session_id = $2 and seq = 2', [
        original.replace('steps/toolCallRequest', 'steps/userMessage'),
        rec.a,
      ]);
      try {
        const report = await runReplay({
          store,
          policy: await resolveReplayPolicy(store, 'v2'),
          selection: { sessionIds: [rec.a] },
        });
        expect(report.summary.tampered).toBe(1);
        expect(report.steps.find((s) => s.status === 'tampered')).toMatchObject({
          seq: 2,
          tamper: 'entry_hash_mismatch',
        });
        expect(report.summary.compared).toBe(3);
      } finally {
        await store.query('update context_entries set content_jcs = $1 where session_id = $2 and seq = 2', [
          original,
          rec.a,
        ]);
      }
    }, 120_000);

    it('small pages walk the chain with a cursor and give the same report', async () => {
      const policy = await resolveReplayPolicy(store, 'v2');
      const paged = await runReplay({ store, policy, selection: ab(), pageSize: 1, concurrency: 1 });
      expectV2Transitions(paged);
      const progress: number[] = [];
      await runReplay({ store, policy, selection: ab(), pageSize: 2, onProgress: (p) => progress.push(p.processed) });
      expect(progress.at(-1)).toBe(8);
    }, 120_000);

    it('worker threads give the same report as in-process replay (v2, recorded, a capped step list, streamed steps)', async () => {
      // Timing fields differ by construction; everything else must not depend on threads or scheduling.
      const comparable = (r: ReplayReport): unknown => {
        const {
          startedAt: _s,
          finishedAt: _f,
          durationMs: _d,
          entriesPerSecond: _e,
          evaluationMs: _m,
          workers: _w,
          ...rest
        } = r.summary;
        return { summary: rest, steps: r.steps, stepsOmitted: r.stepsOmitted };
      };
      for (const against of ['v2', 'recorded']) {
        const policy = await resolveReplayPolicy(store, against);
        for (const options of [{ reportUnchanged: true }, { maxReportedSteps: 3 }]) {
          const inProcess = await runReplay({ store, policy, workers: 0, ...options });
          const streamed: ReplayStep[] = [];
          const threaded = await runReplay({
            store,
            policy,
            workers: 2,
            pageSize: 2,
            onStep: (s) => streamed.push(s),
            ...options,
          });
          expect(inProcess.summary.workers).toBe(0);
          expect(threaded.summary.workers).toBe(2);
          expect(comparable(threaded)).toEqual(comparable(inProcess));
          expect(JSON.stringify(threaded.summary.transitions)).toBe(JSON.stringify(inProcess.summary.transitions));
          expect(streamed).toHaveLength(threaded.summary.selected + threaded.summary.tampered);
          expect(threaded.summary.evaluationMs).toBeGreaterThan(0);
        }
        if (against === 'recorded') {
          const threaded = await runReplay({ store, policy, workers: 2 });
          expect(threaded.summary.compared).toBeGreaterThan(0);
          expect(threaded.summary.nondeterministic).toBe(0);
          expect(threaded.summary.changed).toBe(0);
        }
      }
      // The capped list is the first steps in (session, seq) order, not the first to finish.
      const capped = await runReplay({
        store,
        policy: await resolveReplayPolicy(store, 'v2'),
        workers: 2,
        maxReportedSteps: 3,
        reportUnchanged: true,
      });
      const all = await runReplay({
        store,
        policy: await resolveReplayPolicy(store, 'v2'),
        workers: 0,
        reportUnchanged: true,
      });
      expect(capped.steps).toEqual(all.steps.slice(0, 3));
      expect(capped.stepsOmitted).toBe(all.steps.length - 3);
    }, 240_000);

    it('worker threads: a bundle a worker cannot load fails the replay (no hang); a cancel stops the workers', async () => {
      const v2 = await resolveReplayPolicy(store, 'v2');
      const broken = {
        ...v2,
        description: 'broken',
        bundleFor: async () => ({ key: 'broken', bytes: new Uint8Array([1, 2, 3]), timeoutMs: 1000 }),
      };
      await expect(runReplay({ store, policy: broken, selection: ab(), workers: 2 })).rejects.toMatchObject({
        code: 'policy_invalid',
      });
      const controller = new AbortController();
      let seen = 0;
      const run = runReplay({
        store,
        policy: v2,
        workers: 2,
        pageSize: 1,
        onStep: () => (++seen === 2 ? controller.abort() : undefined),
        signal: controller.signal,
      });
      await expect(run).rejects.toMatchObject({ code: 'cancelled' });
    }, 120_000);

    it('an engine object has no bundle a worker could load: replay stays in-process', async () => {
      const policy = await resolveReplayPolicy(store, await engineOf(versions.v2));
      const report = await runReplay({ store, policy, selection: ab(), workers: 2 });
      expect(report.summary.workers).toBe(0);
      expectV2Transitions(report, report.summary.revisions[0]);
    }, 120_000);

    // Runs last: it records more history, which the whole-store counts above do not expect.
    it('a subagent session starts from the intent it was created with; the determinism check holds across both chains', async () => {
      const intent = { description: 'read the notes', parsed: ['filesystem.read'], scope_mode: 'strict' };
      const parent = recorder.client('agent-parent');
      await parent.hello({ methods_implemented: [...METHODS, 'steps/subagentStart'] });
      await parent.step('steps/sessionStart', { intent });
      const childId = randomUUID();
      expect(
        (
          await parent.step('steps/subagentStart', {
            subagent_session_id: childId,
            parent_session_id: parent.sessionId,
            intent_derivation: 'inherit_full',
            subagent_agent_id: 'agent-child',
          })
        ).decision,
      ).toBe('allow');
      const child = new AcsClient({
        transport: httpTransport(recorder.server.url),
        ikm: IKM,
        agentId: 'agent-child',
        sessionId: childId,
        now: () => recorder.clock.now,
      });
      const read = await child.step('steps/toolCallRequest', {
        tool: { name: 'read_file' },
        arguments: { path: { value: '/workspace/notes.md' } },
      });
      const shell = await child.step('steps/toolCallRequest', SHELL('ls'));
      expect(read.decision).toBe('allow');
      // Outside the inherited intent: IBAC does not allow it (the child's state must carry the intent).
      expect(shell.decision).not.toBe('allow');
      const report = await runReplay({
        store,
        policy: await resolveReplayPolicy(store, 'recorded'),
        selection: { sessionIds: [parent.sessionId, childId] },
        reportUnchanged: true,
      });
      expect(report.summary.sessions).toBe(2);
      expect(report.summary.compared).toBe(4);
      expect(report.summary.nondeterministic).toBe(0);
      expect(report.steps.find((s) => s.sessionId === childId && s.seq === 1)?.replayed?.decision).toBe(shell.decision);
    }, 120_000);
  });
}
