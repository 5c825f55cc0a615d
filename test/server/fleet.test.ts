// The fleet docker-compose.yml describes — one Postgres, two Guardian replicas, one port in front of them — run
// without Docker (no engine on this machine): the replicas' command and environment are read from the compose
// file itself and started as processes on one Postgres database, behind a round-robin proxy like the compose
// file's nginx. Any replica answers any session's next step (docs/running-a-fleet.md), so every session's chain
// stays one linear chain while its steps alternate between replicas, and `audit verify` is clean.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openStore } from '../../src/store/index.ts';
import {
  agentClient,
  auditVerifyAll,
  IKM,
  killAll,
  METHODS,
  ROOT,
  startGuardian,
  TOOL,
  type Serving,
} from '../store/fixtures/serve-process.ts';
import { scratchDatabase } from '../store/postgres-schema.ts';

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: unknown;
}
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
  configs: Record<string, { content: string }>;
};

const database = scratchDatabase('acs_fleet');
const dbUrl = database.url;

/** Round-robin over the replicas, one request each in turn (nginx's default for an upstream). */
function roundRobin(upstreams: string[]): Promise<{ url: string; server: Server; served: number[] }> {
  const served = upstreams.map(() => 0);
  let next = 0;
  const server = createServer((req, res) => {
    const i = next++ % upstreams.length;
    served[i]++;
    const target = new URL(req.url ?? '/', upstreams[i]);
    const forward = httpRequest(target, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, served }),
    ),
  );
}

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-fleet-'));
  await database.create();
}, 60_000);
afterAll(async () => {
  await killAll(children);
  await database.drop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('docker-compose.yml fleet, run as processes', () => {
  it('declares Postgres, two replicas built from this repository with one shared IKM, and one published port in front', () => {
    const { postgres, proxy, 'guardian-1': g1, 'guardian-2': g2 } = compose.services;
    expect(postgres.image).toMatch(/^postgres:/);
    for (const g of [g1, g2]) {
      expect(g.build).toBe('.');
      expect(g.environment?.DATABASE_URL).toMatch(/^postgres:\/\/\w+:\w+@postgres:5432\/\w+$/);
      // One IKM for the fleet (every replica derives the same per-session keys), required, never defaulted.
      expect(g.environment?.GUARDIAN_HMAC_IKM).toMatch(/^\$\{GUARDIAN_HMAC_IKM:\?/);
      expect(g.command?.[0]).toBe('serve');
    }
    expect(g1.command).toEqual(g2.command);
    expect(proxy.ports).toEqual(['8787:8787']);
    expect(compose.configs['proxy-conf'].content).toMatch(/server guardian-1:8787[\s\S]*server guardian-2:8787/);
  });

  it('two replicas with the compose command on one Postgres answer alternating steps of the same sessions', async () => {
    const spec = compose.services['guardian-1'];
    // The compose command with its container paths and port swapped for this machine's.
    const args = [...spec.command!];
    args[args.indexOf('--port') + 1] = '0';
    // The 100 ms evaluation deadline is a production default; on CI's shared cores a late evaluation is (rightly)
    // a fail-closed deny, which is not what this test is about.
    args.push('--eval-timeout-ms', '5000');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: dbUrl,
      GUARDIAN_HMAC_IKM: Buffer.from(IKM).toString('base64'),
    };
    delete env.GUARDIAN_DB_SCHEMA;
    const replicas: Serving[] = [];
    for (const name of ['guardian-1', 'guardian-2']) {
      const replicaArgs = [...args];
      replicaArgs[replicaArgs.indexOf('--data-dir') + 1] = join(dir, name);
      replicas.push(await startGuardian(replicaArgs, env, ROOT, children));
    }
    const front = await roundRobin(replicas.map((r) => r.url.replace('0.0.0.0', '127.0.0.1')));
    try {
      const ready = await fetch(`${front.url}/readyz`);
      expect(ready.status).toBe(200);
      const clients = Array.from({ length: 6 }, (_, i) => agentClient(() => `${front.url}/acs`, `fleet-${i}`));
      await Promise.all(clients.map((c) => c.hello({ methods_implemented: METHODS })));
      await Promise.all(
        clients.map(async (c) => {
          for (let i = 0; i < 10; i++) {
            const out = await c.step('steps/toolCallRequest', TOOL(i));
            expect(out.failure, JSON.stringify(out.failure)).toBeUndefined();
            expect(out.result?.decision).toBe('allow');
          }
        }),
      );
      expect(Math.min(...front.served)).toBeGreaterThan(30);
      const store = await openStore({ databaseUrl: dbUrl, skipMigrations: true });
      try {
        for (const c of clients) {
          const entries = await store.listContextEntries(c.sessionId);
          expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i));
          entries.forEach((e, i) => expect(e.previousHash).toBe(i === 0 ? null : entries[i - 1].entryHash));
          expect(entries.at(-1)?.entryHash).toBe(c.chainHash);
          const row = await store.getSession(c.sessionId);
          expect(
            (row?.state as { counters?: { tool_calls_total?: number } } | undefined)?.counters?.tool_calls_total,
          ).toBe(10);
        }
      } finally {
        await store.close();
      }
    } finally {
      await new Promise((resolve) => front.server.close(resolve));
    }
    const verify = await auditVerifyAll(dbUrl, dir);
    expect(verify.out).toMatch(/6 chains, 60 entries, 0 broken/);
    expect(verify.code).toBe(0);
  }, 240_000);
});
