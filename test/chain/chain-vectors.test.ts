import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  computeEntryHash,
  computeRequestHash,
  entryHashOfJcs,
  sha256Hex,
} from '../../src/chain/index.ts';

const vectors = JSON.parse(readFileSync(new URL('../fixtures/acs/chain-vectors.json', import.meta.url), 'utf8'));

describe('ACS §8.2 hash chain', () => {
  it('request_hash is SHA-256 of the JCS of params as received', () => {
    expect(canonicalJson(vectors.request_hash.params)).toBe(vectors.request_hash.canonical);
    expect(computeRequestHash(vectors.request_hash.params)).toBe(vectors.request_hash.hash);
  });

  it('entry_hash chains each entry to the raw bytes of the previous hash', () => {
    expect(vectors.chain.length).toBeGreaterThanOrEqual(3);
    for (const step of vectors.chain) {
      expect(canonicalJson(step.entry)).toBe(step.canonical_content);
      expect(computeEntryHash(step.entry, step.previous_hash)).toBe(step.entry_hash);
    }
  });

  it('a changed previous hash changes the entry hash', () => {
    const [, second] = vectors.chain;
    expect(computeEntryHash(second.entry, '0'.repeat(64))).not.toBe(second.entry_hash);
  });

  it('a text hashed again (the store checking what the pipeline placed) gets the digest hashing it afresh gives', () => {
    const fresh = (text: string, previousHash: string | null) => {
      const h = createHash('sha256').update(text, 'utf8');
      if (previousHash !== null) h.update(Buffer.from(previousHash, 'hex'));
      return h.digest('hex');
    };
    const [first, second] = vectors.chain;
    for (let round = 0; round < 2; round++) {
      // The same content text placed at three heads, in turn and again: each digest is its own head's.
      for (const previousHash of [null, first.entry_hash, '0'.repeat(64)]) {
        expect(entryHashOfJcs(second.canonical_content, previousHash)).toBe(
          fresh(second.canonical_content, previousHash),
        );
      }
      expect(entryHashOfJcs(second.canonical_content, second.previous_hash)).toBe(second.entry_hash);
      expect(sha256Hex(vectors.request_hash.canonical)).toBe(vectors.request_hash.hash);
      // A text of non-ASCII characters, and one too long to be remembered.
      for (const text of ['{"a":"héllo 😀"}', `{"a":"${'x'.repeat(20_000)}"}`]) {
        expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
        expect(entryHashOfJcs(text, first.entry_hash)).toBe(fresh(text, first.entry_hash));
      }
    }
    expect(() => entryHashOfJcs(second.canonical_content, 'ABC')).toThrow(TypeError);
  });
});
