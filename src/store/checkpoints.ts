// Signed checkpoints of chain heads. The hash chain (ACS §8.2) detects an edited, removed or reordered
// entry, but not a chain rewritten consistently from some point on, nor a truncated tail: a signature
// by the Guardian's key over (chain, seq, head) pins the history up to that seq.
import { canonicalJson } from '../chain/index.ts';
import type { Signer, SigningContext, Verifier } from '../crypto/types.ts';

export interface CheckpointClaim {
  scope: string;
  seq: number;
  headHash: string;
  algorithm: string;
  keyId: string;
}

/** The signed bytes: UTF-8 of JCS({type, scope, seq, head_hash, algorithm, key_id}). */
export function checkpointSigningInput(claim: CheckpointClaim): Uint8Array {
  return new TextEncoder().encode(
    canonicalJson({
      type: 'acs-guardian-checkpoint/v1',
      scope: claim.scope,
      seq: claim.seq,
      head_hash: claim.headHash,
      algorithm: claim.algorithm,
      key_id: claim.keyId,
    }),
  );
}

/** HMAC keys are derived per session: the checkpoint's chain (its session id) is the signing context. */
function contextOf(claim: CheckpointClaim): SigningContext {
  return { sessionId: claim.scope, keyId: claim.keyId };
}

export async function signCheckpoint(
  signer: Signer,
  keyId: string,
  scope: string,
  seq: number,
  headHash: string,
): Promise<CheckpointClaim & { signature: string }> {
  const claim: CheckpointClaim = { scope, seq, headHash, algorithm: signer.algorithm, keyId };
  const signature = await signer.sign(checkpointSigningInput(claim), contextOf(claim));
  return { ...claim, signature: Buffer.from(signature).toString('base64') };
}

/** False on any malformed signature; never throws on bad input. */
export async function verifyCheckpoint(
  verifier: Verifier,
  claim: CheckpointClaim & { signature: string },
): Promise<boolean> {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(claim.signature)) return false;
  try {
    return await verifier.verify(
      checkpointSigningInput(claim),
      new Uint8Array(Buffer.from(claim.signature, 'base64')),
      contextOf(claim),
    );
  } catch {
    return false;
  }
}

/** When the store writes checkpoints on its own. */
export interface CheckpointPolicy {
  signer: Signer;
  keyId: string;
  /** A checkpoint whenever a chain's seq + 1 is a multiple of this (default 64). */
  everyEntries?: number;
  /** Heads appended but not checkpointed for this long get one (default 10 000 ms). */
  everyMs?: number;
}
