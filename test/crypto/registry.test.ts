// The signature registry the request pipeline calls (ACS §10, §10.1, §10.2): every algorithm round-trips,
// and every kind of tampering is refused with `false`, never an exception.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSignatureRegistry,
  decodeHybridSignature,
  encodeHybridSignature,
  envelopeSigningInput,
  generateKeyFile,
  SIGNATURE_ALGORITHMS,
  SignatureRegistryError,
  type EnvelopeSignature,
  type KeyFileJson,
  type SignatureAlgorithm,
  type SignatureRegistry,
} from '../../src/crypto/index.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../fixtures/acs/envelope-signing-vectors.json', import.meta.url), 'utf8'),
);
const ikm = new Uint8Array(Buffer.from(vectors.ikm_hex, 'hex'));
const sessionId = '5c3f1b8e-9a0d-4c2e-8f4b-2d6a7e9c1b30';
const envelope = {
  jsonrpc: '2.0',
  id: 7,
  method: 'steps/toolCallRequest',
  params: {
    acs_version: '0.1.0',
    request_id: 'r-1',
    metadata: { agent_id: 'agent-7', session_id: sessionId },
    payload: { tool: 'ls' },
  },
};
const input = envelopeSigningInput(envelope);
const tamperedInput = envelopeSigningInput({ ...envelope, params: { ...envelope.params, payload: { tool: 'rm' } } });

const ASYMMETRIC = SIGNATURE_ALGORITHMS.filter((a) => a !== 'HMAC-SHA256');
const keyIdOf = (alg: string, n: 'a' | 'b') => `${alg.replace('+', '_')}-${n}`;

let registry: SignatureRegistry;
let keyFiles: KeyFileJson[];
const signed = new Map<SignatureAlgorithm, EnvelopeSignature>();

beforeAll(async () => {
  keyFiles = ASYMMETRIC.flatMap((alg) => [
    generateKeyFile(alg, { keyId: keyIdOf(alg, 'a'), rsaModulusBits: 2048 }),
    generateKeyFile(alg, { keyId: keyIdOf(alg, 'b'), rsaModulusBits: 2048 }),
  ]);
  registry = createSignatureRegistry({ keys: keyFiles, hmacIkm: ikm });
  // Sign every algorithm concurrently: the PQC ones go through the worker pool together.
  await Promise.all(
    SIGNATURE_ALGORITHMS.map(async (alg) => {
      signed.set(
        alg,
        await registry.sign(alg, input, { sessionId, keyId: alg === 'HMAC-SHA256' ? undefined : keyIdOf(alg, 'a') }),
      );
    }),
  );
}, 300_000);

afterAll(async () => {
  await registry?.close();
});

function flipBit(value: string, byteIndex: number): string {
  const bytes = Buffer.from(value, 'base64');
  bytes[byteIndex % bytes.length] ^= 0x01;
  return bytes.toString('base64');
}

describe('every ACS §10.1 algorithm', () => {
  it('is supported for verification and signing when keys are configured', () => {
    expect(registry.supportedAlgorithms().sort()).toEqual([...SIGNATURE_ALGORITHMS].sort());
    expect(registry.signingAlgorithms().sort()).toEqual([...SIGNATURE_ALGORITHMS].sort());
  });

  for (const alg of SIGNATURE_ALGORITHMS) {
    describe(alg, () => {
      it('round-trips and records the signing key id', async () => {
        const sig = signed.get(alg)!;
        expect(sig.algorithm).toBe(alg);
        expect(sig.key_id).toBe(alg === 'HMAC-SHA256' ? 'default' : keyIdOf(alg, 'a'));
        expect(sig.value).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
        expect(await registry.verify(sig, input, { sessionId })).toBe(true);
        // A string input is the same UTF-8 bytes.
        expect(await registry.verify(sig, Buffer.from(input).toString('utf8'), { sessionId })).toBe(true);
      });

      it('refuses a tampered payload', async () => {
        expect(await registry.verify(signed.get(alg)!, tamperedInput, { sessionId })).toBe(false);
      });

      it('refuses a tampered signature (first, middle and last byte)', async () => {
        const sig = signed.get(alg)!;
        const len = Buffer.from(sig.value, 'base64').length;
        for (const at of [0, len >> 1, len - 1]) {
          expect(await registry.verify({ ...sig, value: flipBit(sig.value, at) }, input, { sessionId })).toBe(false);
        }
      });

      it('refuses a tampered key_id (another key of the same algorithm, an unknown key)', async () => {
        const sig = signed.get(alg)!;
        if (alg === 'HMAC-SHA256') {
          // HMAC keys come from the session (docs/keys.md): a key_id naming no entry uses the default IKM, so
          // changing key_id alone changes nothing; the session id is what binds it. Strict mode refuses it.
          expect(await registry.verify(sig, input, { sessionId: 'another-session' })).toBe(false);
          const strict = createSignatureRegistry({ hmacIkm: ikm, hmacAcceptAnyKeyId: false, workerPool: false });
          expect(await strict.verify(sig, input, { sessionId })).toBe(true);
          expect(await strict.verify({ ...sig, key_id: 'conformance' }, input, { sessionId })).toBe(false);
          return;
        }
        expect(await registry.verify({ ...sig, key_id: keyIdOf(alg, 'b') }, input, { sessionId })).toBe(false);
        expect(await registry.verify({ ...sig, key_id: 'no-such-key' }, input, { sessionId })).toBe(false);
      });

      it('refuses the same value relabelled as another algorithm', async () => {
        const sig = signed.get(alg)!;
        for (const other of SIGNATURE_ALGORITHMS.filter((a) => a !== alg)) {
          expect(await registry.verify({ ...sig, algorithm: other }, input, { sessionId })).toBe(false);
        }
      });
    });
  }
});

describe('hybrids (ACS §10.2)', () => {
  for (const alg of ['ML-DSA-65+ECDSA-P256', 'ML-DSA-65+RSA-PSS-SHA256'] as const) {
    it(`${alg}: value is u32be(len)‖ML-DSA-65‖u32be(len)‖classical, and one bad half is refused`, async () => {
      const sig = signed.get(alg)!;
      const parts = decodeHybridSignature(new Uint8Array(Buffer.from(sig.value, 'base64')))!;
      expect(parts.pqc.length).toBe(3309);
      expect(parts.classical.length).toBe(alg.endsWith('ECDSA-P256') ? 64 : 256);
      const raw = Buffer.from(sig.value, 'base64');
      expect(raw.readUInt32BE(0)).toBe(3309);

      const other = await registry.sign(alg, tamperedInput, { sessionId, keyId: keyIdOf(alg, 'a') });
      const otherParts = decodeHybridSignature(new Uint8Array(Buffer.from(other.value, 'base64')))!;
      const mix = (p: { pqc: Uint8Array; classical: Uint8Array }) => ({
        ...sig,
        value: Buffer.from(encodeHybridSignature(p)).toString('base64'),
      });
      // Valid PQC half + classical half over another input, and the reverse.
      expect(
        await registry.verify(mix({ pqc: parts.pqc, classical: otherParts.classical }), input, { sessionId }),
      ).toBe(false);
      expect(
        await registry.verify(mix({ pqc: otherParts.pqc, classical: parts.classical }), input, { sessionId }),
      ).toBe(false);
      // Halves swapped, one half empty, and the re-assembled original still verifying (so the mixes fail for the right reason).
      expect(await registry.verify(mix({ pqc: parts.classical, classical: parts.pqc }), input, { sessionId })).toBe(
        false,
      );
      expect(await registry.verify(mix({ pqc: parts.pqc, classical: new Uint8Array(0) }), input, { sessionId })).toBe(
        false,
      );
      expect(
        await registry.verify(mix({ pqc: new Uint8Array(0), classical: parts.classical }), input, { sessionId }),
      ).toBe(false);
      expect(await registry.verify(mix(parts), input, { sessionId })).toBe(true);
      // Length prefixes that do not exactly cover the blob.
      const trailing = Buffer.concat([raw, Buffer.from([0])]).toString('base64');
      expect(await registry.verify({ ...sig, value: trailing }, input, { sessionId })).toBe(false);
      const lying = Buffer.from(raw);
      lying.writeUInt32BE(3308, 0);
      expect(await registry.verify({ ...sig, value: lying.toString('base64') }, input, { sessionId })).toBe(false);
      const huge = Buffer.from(raw);
      huge.writeUInt32BE(0xffffffff, 0);
      expect(await registry.verify({ ...sig, value: huge.toString('base64') }, input, { sessionId })).toBe(false);
    });
  }

  it('a component key cannot stand in for the hybrid: ML-DSA-65 half alone under the hybrid key id is refused', async () => {
    const sig = signed.get('ML-DSA-65+ECDSA-P256')!;
    const parts = decodeHybridSignature(new Uint8Array(Buffer.from(sig.value, 'base64')))!;
    expect(
      await registry.verify({ ...sig, value: Buffer.from(parts.pqc).toString('base64') }, input, { sessionId }),
    ).toBe(false);
  });
});

describe('malformed signatures are a failed verification, never an exception', () => {
  const ecdsa = () => signed.get('ECDSA-P256')!;
  const cases: [string, () => unknown][] = [
    ['undefined', () => undefined],
    ['null', () => null],
    ['a string', () => 'sig'],
    ['an array', () => [ecdsa()]],
    ['no algorithm', () => ({ value: ecdsa().value, key_id: ecdsa().key_id })],
    ['unknown algorithm', () => ({ ...ecdsa(), algorithm: 'ECDSA-P384' })],
    ['empty key_id', () => ({ ...ecdsa(), key_id: '' })],
    ['numeric value', () => ({ ...ecdsa(), value: 12 })],
    ['empty value', () => ({ ...ecdsa(), value: '' })],
    ['base64url alphabet', () => ({ ...ecdsa(), value: ecdsa().value.replace(/\+/g, '-').replace(/\//g, '_') + '-_' })],
    [
      'missing padding',
      () => ({ ...signed.get('HMAC-SHA256')!, value: signed.get('HMAC-SHA256')!.value.replace(/=+$/, '') }),
    ],
    ['embedded whitespace', () => ({ ...ecdsa(), value: ecdsa().value.slice(0, 8) + ' ' + ecdsa().value.slice(8) })],
    [
      'non-canonical trailing bits',
      () => ({
        ...signed.get('HMAC-SHA256')!,
        value: signed.get('HMAC-SHA256')!.value.replace(/.=$/, (m) => String.fromCharCode(m.charCodeAt(0) + 1) + '='),
      }),
    ],
    [
      'truncated ML-DSA-65',
      () => ({
        ...signed.get('ML-DSA-65')!,
        value: Buffer.from(signed.get('ML-DSA-65')!.value, 'base64').subarray(0, 3308).toString('base64'),
      }),
    ],
    [
      'SLH-DSA-128s value of zeros',
      () => ({ ...signed.get('SLH-DSA-128s')!, value: Buffer.alloc(7856).toString('base64') }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      await expect(registry.verify(make(), input, { sessionId })).resolves.toBe(false);
    });
  }

  it('random signature objects (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          algorithm: fc.constantFrom<unknown>(...SIGNATURE_ALGORITHMS, 'x', 1, null),
          value: fc.oneof(fc.base64String(), fc.string(), fc.constant(null)),
          key_id: fc.oneof(fc.constantFrom(...keyFiles.map((k) => k.key_id), 'default'), fc.string()),
        }),
        async (sig) => {
          expect(await registry.verify(sig, input, { sessionId })).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('bad verify options are refused, not thrown', async () => {
    const hmac = signed.get('HMAC-SHA256')!;
    expect(await registry.verify(hmac, input, undefined as unknown as { sessionId: string })).toBe(false);
    expect(await registry.verify(hmac, 42 as unknown as string, { sessionId })).toBe(false);
  });
});

describe('ACS signing input and the shared HMAC vectors', () => {
  for (const side of ['request', 'response'] as const) {
    it(`verifies and reproduces the ${side} vector through the registry`, async () => {
      const env = vectors[side].signed;
      const sig = (env.params ?? env.result).signature;
      expect(Buffer.from(envelopeSigningInput(env)).toString('utf8')).toBe(vectors[side].signing_input);
      expect(await registry.verify(sig, envelopeSigningInput(env), { sessionId: vectors.session_id })).toBe(true);
      const again = await registry.sign('HMAC-SHA256', envelopeSigningInput(env), { sessionId: vectors.session_id });
      expect(again.value).toBe(sig.value);
    });
  }

  it('envelopeSigningInput leaves the envelope untouched and removes error.signature too', () => {
    const env = {
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32004, message: 'x', signature: { algorithm: 'HMAC-SHA256', value: 'AA==', key_id: 'k' } },
    };
    const before = JSON.stringify(env);
    expect(Buffer.from(envelopeSigningInput(env)).toString()).toBe(
      '{"error":{"code":-32004,"message":"x"},"id":1,"jsonrpc":"2.0"}',
    );
    expect(JSON.stringify(env)).toBe(before);
  });
});

describe('policies: accepted algorithms, agents, acs-crypto', () => {
  it('a deployment allow-list narrows supportedAlgorithms and refuses the rest', async () => {
    const r = createSignatureRegistry({
      keys: keyFiles,
      hmacIkm: ikm,
      acceptedAlgorithms: ['HMAC-SHA256', 'ML-DSA-65'],
      workerPool: false,
    });
    expect(r.supportedAlgorithms()).toEqual(['HMAC-SHA256', 'ML-DSA-65']);
    expect(await r.verify(signed.get('ML-DSA-65')!, input, { sessionId })).toBe(true);
    expect(await r.verify(signed.get('ECDSA-P256')!, input, { sessionId })).toBe(false);
  });

  it('per-agent accepted algorithms and key ids', async () => {
    const r = createSignatureRegistry({
      keys: keyFiles,
      hmacIkm: ikm,
      agents: { 'agent-pq': { algorithms: ['ML-DSA-65'] }, 'agent-ec': { keyIds: [keyIdOf('ECDSA-P256', 'b')] } },
      workerPool: false,
    });
    expect(r.acceptedAlgorithms('agent-pq')).toEqual(['ML-DSA-65']);
    expect(await r.verify(signed.get('ML-DSA-65')!, input, { sessionId, agentId: 'agent-pq' })).toBe(true);
    expect(await r.verify(signed.get('HMAC-SHA256')!, input, { sessionId, agentId: 'agent-pq' })).toBe(false);
    expect(await r.verify(signed.get('ECDSA-P256')!, input, { sessionId, agentId: 'agent-ec' })).toBe(false); // key a not allowed
    const byB = await r.sign('ECDSA-P256', input, { sessionId, keyId: keyIdOf('ECDSA-P256', 'b') });
    expect(await r.verify(byB, input, { sessionId, agentId: 'agent-ec' })).toBe(true);
    // Agents without a policy get the deployment list.
    expect(await r.verify(signed.get('HMAC-SHA256')!, input, { sessionId, agentId: 'someone-else' })).toBe(true);
  });

  it('an agent-bound key verifies only that agent', async () => {
    const bound = generateKeyFile('ECDSA-P256', { keyId: 'agent-7-key', agentId: 'agent-7' });
    const r = createSignatureRegistry({ keys: [bound], workerPool: false });
    const sig = await r.sign('ECDSA-P256', input, { sessionId });
    expect(await r.verify(sig, input, { sessionId, agentId: 'agent-7' })).toBe(true);
    expect(await r.verify(sig, input, { sessionId, agentId: 'agent-8' })).toBe(false);
    expect(await r.verify(sig, input, { sessionId })).toBe(false);
  });

  it('acs-crypto is acceptable only with an ML-DSA-65 key that can sign', async () => {
    expect(registry.acsCryptoAvailable()).toBe(true);
    const hmacOnly = createSignatureRegistry({ hmacIkm: ikm, workerPool: false });
    expect(hmacOnly.acsCryptoAvailable()).toBe(false);
    expect(hmacOnly.supportedAlgorithms()).toEqual(['HMAC-SHA256']);
    const slhOnly = createSignatureRegistry({
      keys: keyFiles.filter((k) => k.algorithm === 'SLH-DSA-128f'),
      workerPool: false,
    });
    expect(slhOnly.acsCryptoAvailable()).toBe(false);
    const mlDsa = keyFiles.find((k) => k.algorithm === 'ML-DSA-65')!;
    const verifyOnly = createSignatureRegistry({ keys: [{ ...mlDsa, private_key: undefined }], workerPool: false });
    expect(verifyOnly.supportedAlgorithms()).toEqual(['ML-DSA-65']);
    expect(verifyOnly.acsCryptoAvailable()).toBe(false);
    const full = createSignatureRegistry({ keys: [mlDsa], workerPool: false });
    expect(full.acsCryptoAvailable()).toBe(true);
  });
});

describe('sign() errors are precise', () => {
  it('unknown algorithm, missing key, key of another algorithm, verify-only key, HMAC without session', async () => {
    await expect(registry.sign('ECDSA-P384' as SignatureAlgorithm, input, { sessionId })).rejects.toThrow(
      SignatureRegistryError,
    );
    await expect(registry.sign('ECDSA-P256', input, { sessionId, keyId: 'nope' })).rejects.toThrow(
      /no key with key_id "nope"/,
    );
    await expect(registry.sign('ECDSA-P256', input, { sessionId, keyId: keyIdOf('ML-DSA-65', 'a') })).rejects.toThrow(
      /is a ML-DSA-65 key, not ECDSA-P256/,
    );
    await expect(registry.sign('HMAC-SHA256', input, { sessionId: '' })).rejects.toThrow(/needs a sessionId/);
    const pubOnly = createSignatureRegistry({ keys: [{ ...keyFiles[0], private_key: undefined }], workerPool: false });
    await expect(pubOnly.sign(keyFiles[0].algorithm, input, { sessionId, keyId: keyFiles[0].key_id })).rejects.toThrow(
      /verification only/,
    );
    await expect(pubOnly.sign('ML-DSA-87', input, { sessionId })).rejects.toThrow(
      /no active signing key for ML-DSA-87/,
    );
  });
});

describe('checkpoint signer', () => {
  it('responses with HMAC, checkpoints with ML-DSA-65: registry.signer() gives a types.ts Signer + Verifier', async () => {
    const checkpoints = registry.signer('ML-DSA-65', keyIdOf('ML-DSA-65', 'b'));
    expect(checkpoints.keyId).toBe(keyIdOf('ML-DSA-65', 'b'));
    const head = new TextEncoder().encode('a'.repeat(64));
    const raw = await checkpoints.sign(head, { sessionId, keyId: checkpoints.keyId });
    expect(raw.length).toBe(3309);
    expect(await checkpoints.verify(head, raw, { sessionId, keyId: checkpoints.keyId })).toBe(true);
    expect(
      await checkpoints.verify(new TextEncoder().encode('b'.repeat(64)), raw, { sessionId, keyId: checkpoints.keyId }),
    ).toBe(false);
    // The same bytes as an envelope signature verify through the registry.
    expect(
      await registry.verify(
        { algorithm: 'ML-DSA-65', value: Buffer.from(raw).toString('base64'), key_id: checkpoints.keyId },
        head,
        { sessionId },
      ),
    ).toBe(true);
    const responses = registry.signer('HMAC-SHA256');
    expect(responses.keyId).toBe('default');
  });
});

describe('round trips over arbitrary inputs (property)', () => {
  it('HMAC-SHA256, ECDSA-P256 and ML-DSA-44: any input verifies; flipping any input bit is refused', async () => {
    const r = createSignatureRegistry({
      keys: keyFiles.filter((k) => k.algorithm === 'ECDSA-P256' || k.algorithm === 'ML-DSA-44'),
      hmacIkm: ikm,
      workerPool: false,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<SignatureAlgorithm>('HMAC-SHA256', 'ECDSA-P256', 'ML-DSA-44'),
        fc.uint8Array({ minLength: 1, maxLength: 512 }),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 40 }),
        async (alg, bytes, bit, session) => {
          const sig = await r.sign(alg, bytes, { sessionId: session });
          expect(await r.verify(sig, bytes, { sessionId: session })).toBe(true);
          const flipped = Uint8Array.from(bytes);
          flipped[(bit >> 3) % flipped.length] ^= 1 << (bit & 7);
          expect(await r.verify(sig, flipped, { sessionId: session })).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });
});
