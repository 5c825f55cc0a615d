// A browser page that compiles a Rego policy with the toolchain's browser entry and evaluates it with
// @open-policy-agent/opa-wasm: bundled by browser.test.ts with esbuild (platform=browser) and loaded in Chromium.
import {
  compilePolicyWasm,
  evaluateEntrypoint,
  hostBuiltins,
  instantiatePolicy,
  RegoErrors,
} from '../../../src/rego/browser.ts';
import { POLICY, POLICY_ENTRYPOINT, POLICY_FILE } from './policy.ts';

interface PageApi {
  /** The compiled module, base64 (the test compares it with the module Node compiles). */
  wasmBase64: string;
  decide(input: unknown): unknown;
  /** Compile other sources; resolves to their formatted diagnostics, or '' when they compile. */
  diagnostics(text: string): Promise<string>;
}

declare global {
  var regoPage: Promise<PageApi>;
}

// The project type-checks without the DOM library; the two members the page touches, typed here.
interface PageElement {
  textContent: string | null;
  setAttribute(name: string, value: string): void;
}
declare const document: { body: PageElement; getElementById(id: string): PageElement | null };

function base64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

async function start(): Promise<PageApi> {
  const runtimeWasm = new Uint8Array(await (await fetch('/runtime.wasm')).arrayBuffer());
  const { wasm } = await compilePolicyWasm({
    sources: [{ file: POLICY_FILE, text: POLICY }],
    entrypoints: [POLICY_ENTRYPOINT],
    runtimeWasm,
  });
  const policy = await instantiatePolicy(wasm, hostBuiltins());
  policy.setData({});
  const out = document.getElementById('decision')!;
  return {
    wasmBase64: base64(wasm),
    decide(input) {
      const resultSet = evaluateEntrypoint(policy, POLICY_ENTRYPOINT, input);
      out.textContent = JSON.stringify(resultSet);
      return resultSet;
    },
    async diagnostics(text) {
      try {
        await compilePolicyWasm({ sources: [{ file: 'bad.rego', text }], entrypoints: ['bad/x'], runtimeWasm });
        return '';
      } catch (err) {
        if (err instanceof RegoErrors) return err.errors.map((e) => e.format()).join('\n');
        throw err;
      }
    },
  };
}

globalThis.regoPage = start();
globalThis.regoPage.then(
  () => document.body.setAttribute('data-state', 'ready'),
  (err: unknown) => {
    document.body.setAttribute('data-state', 'failed');
    document.getElementById('decision')!.textContent = String(err instanceof Error ? err.stack : err);
  },
);
