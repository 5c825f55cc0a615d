import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalJson, computeEntryHash, computeRequestHash } from '../../src/chain/index.ts';

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
});
