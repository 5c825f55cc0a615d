// `audit verify`: recompute every stored chain from what is stored (ACS §8.2), check seq continuity, the
// head row, and the signed checkpoints that catch truncation and consistent rewrites.
import { canonicalJson, computeEntryHash, computeRequestHash, type ContextEntryContent } from '../chain/index.ts';
import type { Verifier } from '../crypto/types.ts';
import type { SignatureRegistry } from '../crypto/registry.ts';
import { checkpointSigningInput, verifyCheckpoint } from '../store/checkpoints.ts';
import { verifyAgbomVersions } from '../agbom/history.ts';
import type { CheckpointRecord, DurableStore, StoredEntryRow } from '../store/types.ts';

export type ChainBreakKind =
  /** An entry's stored content no longer hashes to its entry_hash (content edited). */
  | 'entry_hash_mismatch'
  /** Stored params no longer hash to the entry's request_hash (params edited). */
  | 'request_hash_mismatch'
  /** An entry's previous_hash is not its predecessor's entry_hash (entries deleted, swapped or spliced). */
  | 'previous_hash_mismatch'
  /** seq does not continue 0, 1, 2, … (an entry deleted or moved). */
  | 'seq_gap'
  /** An indexed column disagrees with the hashed content (edited for queries only). */
  | 'column_mismatch'
  /** The delivered decision's chain_hash is not the entry it answered (ACS §8.6). */
  | 'decision_chain_hash_mismatch'
  /** The stored content or params are not JSON. */
  | 'unparseable_entry'
  /** The head row disagrees with the last entry (tail truncated or head edited). */
  | 'head_mismatch'
  /** A signed checkpoint names a head this chain no longer has at that seq (chain rewritten). */
  | 'checkpoint_mismatch'
  /** A signed checkpoint lies beyond the chain's last entry (tail truncated). */
  | 'checkpoint_beyond_chain'
  /** A checkpoint's signature does not verify (forged or edited checkpoint). */
  | 'checkpoint_signature_invalid'
  /** A pruned chain has no valid checkpoint of its final head. */
  | 'pruned_without_checkpoint'
  /** A stored AgBOM version is not what its agbom/* chain entry carried (src/agbom/history.ts). */
  | 'agbom_mismatch';

export interface ChainBreak {
  sessionId: string;
  /** The seq the break is at; null when it concerns the chain as a whole. */
  seq: number | null;
  kind: ChainBreakKind;
  message: string;
}

export interface ChainReport {
  sessionId: string;
  ok: boolean;
  entries: number;
  /** Last seq in the head row (-1: empty). */
  headSeq: number;
  pruned: boolean;
  checkpoints: number;
  checkpointsVerified: number;
  /** The earliest break (lowest seq; chain-wide breaks last). */
  firstBreak: ChainBreak | null;
  /** Every break found (the entry walk stops at its first one). */
  breaks: ChainBreak[];
  /** Not failures: e.g. checkpoints whose algorithm no verifier was given for. */
  warnings: string[];
}

/** Checks one checkpoint's signature: true/false, or undefined when no key for it is available. */
export type CheckpointSignatureCheck = (checkpoint: CheckpointRecord) => Promise<boolean | undefined>;

export interface VerifyOptions {
  /** Verifiers by algorithm, for checkpoint signatures. Without one, those checkpoints are only warned about. */
  verifiers?: Verifier[];
  /** Takes precedence over `verifiers`: e.g. the signature registry, which resolves key ids. */
  checkpointSignature?: CheckpointSignatureCheck;
  /** Entries read per query (default 1000). */
  pageSize?: number;
  /** Hears the number of entries checked after each page (the admin API streams it). */
  onProgress?: (entriesChecked: number) => void;
}

/** Checkpoint signatures checked by the signature registry (it resolves key ids); unknown algorithms: not checked. */
export function registryCheckpointCheck(registry: SignatureRegistry): CheckpointSignatureCheck {
  const known = new Set<string>(registry.supportedAlgorithms());
  return async (cp) => {
    if (!known.has(cp.algorithm)) return undefined;
    return registry.verify(
      { algorithm: cp.algorithm, value: cp.signature, key_id: cp.keyId },
      checkpointSigningInput(cp),
      { sessionId: cp.scope },
    );
  };
}

/** Compares an indexed column with the hashed member it copies (absent member ⇔ null column). */
function columnAgrees(column: string | null, member: unknown): boolean {
  return member === undefined ? column === null : column === member;
}

function breakAt(sessionId: string, seq: number | null, kind: ChainBreakKind, message: string): ChainBreak {
  return { sessionId, seq, kind, message };
}

/** Checks one stored entry against its predecessor; returns its first problem, or null. */
function checkEntry(
  sessionId: string,
  row: StoredEntryRow,
  expectedSeq: number,
  previousHash: string | null,
): ChainBreak | null {
  const seq = Number(row.seq);
  if (seq !== expectedSeq) {
    return breakAt(
      sessionId,
      expectedSeq,
      'seq_gap',
      `expected seq ${expectedSeq}, found seq ${seq}: ${seq - expectedSeq} entr${seq - expectedSeq === 1 ? 'y' : 'ies'} missing`,
    );
  }
  let content: ContextEntryContent;
  let params: unknown;
  try {
    content = JSON.parse(row.contentJcs) as ContextEntryContent;
    params = JSON.parse(row.paramsJcs);
    if (!content || typeof content !== 'object' || Array.isArray(content))
      throw new TypeError('content is not an object');
  } catch (err) {
    return breakAt(
      sessionId,
      seq,
      'unparseable_entry',
      `stored entry is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (row.previousHash !== previousHash) {
    return breakAt(
      sessionId,
      seq,
      'previous_hash_mismatch',
      `previous_hash ${row.previousHash ?? 'null'} is not the predecessor's entry_hash ${previousHash ?? 'null (first entry)'}`,
    );
  }
  let recomputed: string;
  try {
    recomputed = computeEntryHash(content, row.previousHash);
  } catch (err) {
    return breakAt(
      sessionId,
      seq,
      'unparseable_entry',
      `entry cannot be hashed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (recomputed !== row.entryHash) {
    return breakAt(
      sessionId,
      seq,
      'entry_hash_mismatch',
      `entry_hash ${row.entryHash} but the stored content hashes to ${recomputed}`,
    );
  }
  if (content.request_hash !== undefined && computeRequestHash(params) !== content.request_hash) {
    return breakAt(
      sessionId,
      seq,
      'request_hash_mismatch',
      `request_hash ${String(content.request_hash)} but the stored params hash to ${computeRequestHash(params)}`,
    );
  }
  const provenance = content.provenance_summary === undefined ? undefined : canonicalJson(content.provenance_summary);
  const columns: [string, string | null, unknown][] = [
    ['entry_id', row.entryId, content.entry_id],
    ['step_id', row.stepId, content.step_id],
    ['step_type', row.stepType, content.step_type],
    ['request_hash', row.requestHash, content.request_hash],
    ['timestamp', row.timestamp, content.timestamp],
    ['provenance_summary', row.provenanceSummaryJcs, provenance],
  ];
  for (const [name, column, member] of columns) {
    if (!columnAgrees(column, member))
      return breakAt(sessionId, seq, 'column_mismatch', `column ${name} disagrees with the hashed entry`);
  }
  if (row.resultJcs !== null) {
    let result: unknown;
    try {
      result = JSON.parse(row.resultJcs);
    } catch {
      return breakAt(sessionId, seq, 'unparseable_entry', 'stored decision is not valid JSON');
    }
    const chainHash = (result as { chain_hash?: unknown } | null)?.chain_hash;
    if (chainHash !== undefined && chainHash !== row.entryHash) {
      return breakAt(
        sessionId,
        seq,
        'decision_chain_hash_mismatch',
        `the delivered decision carries chain_hash ${String(chainHash)}, not this entry's ${row.entryHash}`,
      );
    }
  }
  return null;
}

export async function verifyChain(
  store: DurableStore,
  sessionId: string,
  options: VerifyOptions = {},
): Promise<ChainReport> {
  const pageSize = Math.min(Math.max(1, options.pageSize ?? 1000), 10_000);
  const verifiers = new Map((options.verifiers ?? []).map((v) => [v.algorithm as string, v]));
  const chain = await store.getChain(sessionId);
  const cps = await store.listCheckpoints(sessionId);
  const report: ChainReport = {
    sessionId,
    ok: true,
    entries: 0,
    headSeq: chain?.seq ?? -1,
    pruned: Boolean(chain?.prunedAt),
    checkpoints: cps.length,
    checkpointsVerified: 0,
    firstBreak: null,
    breaks: [],
    warnings: [],
  };
  const bySeq = new Map<number, CheckpointRecord[]>();
  for (const cp of cps) bySeq.set(cp.seq, [...(bySeq.get(cp.seq) ?? []), cp]);

  // Signatures first: a checkpoint only proves anything if the key holder made it.
  const trusted: CheckpointRecord[] = [];
  for (const cp of cps) {
    const verifier = verifiers.get(cp.algorithm);
    const valid = options.checkpointSignature
      ? await options.checkpointSignature(cp)
      : verifier
        ? await verifyCheckpoint(verifier, cp)
        : undefined;
    if (valid === undefined) {
      report.warnings.push(
        `checkpoint at seq ${cp.seq}: no key for ${cp.algorithm} ${cp.keyId}; signature not checked`,
      );
      trusted.push(cp);
      continue;
    }
    if (valid) {
      report.checkpointsVerified++;
      trusted.push(cp);
    } else {
      report.breaks.push(
        breakAt(
          sessionId,
          cp.seq,
          'checkpoint_signature_invalid',
          `checkpoint at seq ${cp.seq} (key ${cp.keyId}) has an invalid ${cp.algorithm} signature`,
        ),
      );
    }
  }

  if (report.pruned && chain) {
    // A pruned chain keeps only its head row and checkpoints: the final head must be signed.
    const covered = trusted.some((cp) => cp.seq === chain.seq && cp.headHash === chain.headHash);
    if (!covered)
      report.breaks.push(
        breakAt(
          sessionId,
          null,
          'pruned_without_checkpoint',
          `pruned chain has no valid checkpoint of its head (seq ${chain.seq})`,
        ),
      );
    return finish(report);
  }

  let expectedSeq = 0;
  let previousHash: string | null = null;
  let entryBreak: ChainBreak | null = null;
  const hashAt = new Map<number, string>();
  for (;;) {
    const rows = await store.readStoredEntries(sessionId, expectedSeq - 1, pageSize);
    for (const row of rows) {
      entryBreak = checkEntry(sessionId, row, expectedSeq, previousHash);
      if (entryBreak) break;
      if (bySeq.has(expectedSeq)) hashAt.set(expectedSeq, row.entryHash);
      previousHash = row.entryHash;
      expectedSeq++;
      report.entries++;
    }
    options.onProgress?.(report.entries);
    if (entryBreak || rows.length < pageSize) break;
  }
  if (entryBreak) report.breaks.push(entryBreak);
  const lastSeq = expectedSeq - 1;

  if (!entryBreak) {
    if (!chain) {
      if (lastSeq >= 0)
        report.breaks.push(
          breakAt(sessionId, null, 'head_mismatch', `entries up to seq ${lastSeq} but no chain head row`),
        );
    } else if (chain.seq !== lastSeq || chain.headHash !== previousHash) {
      report.breaks.push(
        breakAt(
          sessionId,
          lastSeq + 1,
          'head_mismatch',
          `head row says seq ${chain.seq} (${chain.headHash ?? 'null'}) but the entries end at seq ${lastSeq} (${previousHash ?? 'null'}): tail truncated or head edited`,
        ),
      );
    }
  }
  for (const cp of trusted) {
    if (cp.seq > lastSeq) {
      // Only meaningful when the walk reached the real end: a mid-chain break already explains it.
      if (!entryBreak)
        report.breaks.push(
          breakAt(
            sessionId,
            cp.seq,
            'checkpoint_beyond_chain',
            `signed checkpoint at seq ${cp.seq} but the chain ends at seq ${lastSeq}: entries removed`,
          ),
        );
    } else if (hashAt.get(cp.seq) !== cp.headHash) {
      report.breaks.push(
        breakAt(
          sessionId,
          cp.seq,
          'checkpoint_mismatch',
          `signed checkpoint at seq ${cp.seq} names head ${cp.headHash}, the chain has ${hashAt.get(cp.seq)}: chain rewritten`,
        ),
      );
    }
  }
  for (const m of await verifyAgbomVersions(store, sessionId))
    report.breaks.push(breakAt(sessionId, m.seq, 'agbom_mismatch', m.message));
  return finish(report);
}

function finish(report: ChainReport): ChainReport {
  report.breaks.sort((a, b) => (a.seq ?? Number.MAX_SAFE_INTEGER) - (b.seq ?? Number.MAX_SAFE_INTEGER));
  report.firstBreak = report.breaks[0] ?? null;
  report.ok = report.breaks.length === 0;
  return report;
}

export interface VerifyAllSummary {
  chains: number;
  broken: number;
  entries: number;
}

/** Verifies every chain, one report at a time (constant memory in the number of chains). */
export async function verifyAllChains(
  store: DurableStore,
  options: VerifyOptions = {},
  onReport?: (report: ChainReport) => void | Promise<void>,
): Promise<VerifyAllSummary> {
  const summary: VerifyAllSummary = { chains: 0, broken: 0, entries: 0 };
  let after: string | undefined;
  for (;;) {
    const page = await store.listChains({ afterSessionId: after, limit: 500 });
    for (const chain of page) {
      const report = await verifyChain(store, chain.sessionId, options);
      summary.chains++;
      summary.entries += report.entries;
      if (!report.ok) summary.broken++;
      await onReport?.(report);
    }
    if (page.length < 500) break;
    after = page[page.length - 1].sessionId;
  }
  return summary;
}
