// provenance_id is "Unique within session" (ACS §7, provenance.json: "Unique identifier for this provenance node
// within the session"). The rule is the Provenance object's own, so it binds every session whatever its profiles
// and producer: an ACS-Core session's optional Provenance, and a `provenance_producer: "none"` session's structural
// records (Intent's parser_provenance, an AgBOM component's registration_provenance), are checked as an
// ACS-Provenance session's are. A step whose payload carries a Provenance
// object under an id the session already gave a different Provenance object (at an earlier chain entry, or
// earlier in the same payload) is refused -32602 `provenance_id_reused` (ACS §17: invalid params; §17.2
// registers no DENY for it). The same object sent again — an AgBOM component's registration_provenance restated
// by a full `agbom/changed`, data carried on verbatim — names the same node and passes. docs/conformance.md,
// "acs-provenance".
//
// Which ids a session used is what its chain says: a refused step writes no entry (ACS §8.2) and uses none; a
// decided one (allow or deny) is chained and uses all of its ids. This replica remembers them per session, valid
// up to the chain head they were read or written at. A step placed at another head (a restart, another replica
// appended, the session was evicted) first reads the entries after what is remembered from the store, and the
// commit refuses a step whose head moved meanwhile (StepCommit.expectedHead), so no duplicate is admitted against
// a stale view. Memory is bounded: least recently used sessions are forgotten, and a session with more ids than
// one session may keep is checked by asking the store for the step's own ids every time.
import { canonicalJson, sha256Hex } from '../../chain/index.ts';
import { payloadProvenance } from '../../chain/provenance-summary.ts';
import { StoreError } from '../../store/errors.ts';
import type { ChainHead, GuardianStore, ProvenanceIdStore } from '../../store/types.ts';
import { AcsError, AcsErrorCode } from '../errors.ts';
import type { AcsRequest } from '../types.ts';

/** A Provenance object as compared: its JCS, or a digest of it when that is longer than the digest. */
type RecordKey = string;

interface Used {
  key: RecordKey;
  /** The chain entry that first carried it. */
  seq: number;
}

interface Remembered {
  /** Every id of the session's entries up to and including this head (seq -1: the chain is empty). */
  seq: number;
  entryHash: string | null;
  ids: Map<string, Used>;
}

/** The Provenance objects of one step, checked and waiting for the step's commit. */
export interface StepProvenanceIds {
  readonly sessionId: string;
  readonly head: ChainHead | null;
  readonly ids: ReadonlyMap<string, RecordKey>;
}

export interface ProvenanceIdMemoryOptions {
  /** Ids kept over all sessions (default 262144); least recently used sessions go first. */
  maxIds?: number;
  /** Ids one session may keep (default maxIds / 8); beyond it the session is checked against the store each step. */
  maxIdsPerSession?: number;
}

/** Sessions marked too large to keep; one forgotten here is read whole again at its next check, then marked again. */
const MAX_OVERSIZED = 1024;
const DIGEST_OVER = 71; // 'sha256:' + 64 hex digits

function recordKey(record: unknown): RecordKey {
  const jcs = canonicalJson(record);
  return jcs.length > DIGEST_OVER ? `sha256:${sha256Hex(jcs)}` : jcs;
}

/** Every Provenance object of a payload by id, with its pointer; the second of two different ones is a conflict. */
function objectsOf(payload: unknown): {
  ids: Map<string, { key: RecordKey; pointer: string }>;
  clash?: { id: string; pointer: string };
} {
  const ids = new Map<string, { key: RecordKey; pointer: string }>();
  for (const p of payloadProvenance(payload)) {
    const key = recordKey(p.object);
    const seen = ids.get(p.provenance_id);
    if (!seen) ids.set(p.provenance_id, { key, pointer: p.pointer });
    else if (seen.key !== key) return { ids, clash: { id: p.provenance_id, pointer: p.pointer } };
  }
  return { ids };
}

function readsProvenance(store: GuardianStore): store is GuardianStore & ProvenanceIdStore {
  return typeof (store as Partial<ProvenanceIdStore>).readProvenanceEntries === 'function';
}

function reused(request: AcsRequest, pointer: string, id: string, seq: number | null): AcsError {
  const where = seq === null ? 'earlier in this payload' : `at chain entry ${seq} of this session`;
  return new AcsError(
    AcsErrorCode.InvalidParams,
    'provenance_id_reused',
    `${request.method} payload: provenance_id ${JSON.stringify(id)} already names a different Provenance object ${where}; provenance_id is unique within a session (ACS §7)`,
    { pointer: `/params/payload${pointer}/provenance_id`, method: request.method },
  );
}

export class ProvenanceIdMemory {
  readonly #sessions = new Map<string, Remembered>();
  /** Sessions with more ids than one may keep, least recently seen first (MAX_OVERSIZED of them). */
  readonly #oversized = new Map<string, true>();
  readonly #maxIds: number;
  readonly #maxPerSession: number;
  #total = 0;

  constructor(options: ProvenanceIdMemoryOptions = {}) {
    this.#maxIds = Math.max(1, options.maxIds ?? 262_144);
    this.#maxPerSession = Math.max(1, Math.min(this.#maxIds, options.maxIdsPerSession ?? this.#maxIds / 8));
  }

  /**
   * Checks a step's Provenance objects against the session's earlier ones as of `head` (the head the step will
   * be placed at). Throws -32602 `provenance_id_reused`, or StoreError when the store cannot say.
   */
  async check(store: GuardianStore, request: AcsRequest, head: ChainHead | null): Promise<StepProvenanceIds> {
    const sessionId = request.params.metadata.session_id;
    const own = objectsOf(request.params.payload);
    if (own.clash) throw reused(request, own.clash.pointer, own.clash.id, null);
    const ids = new Map([...own.ids].map(([id, o]) => [id, o.key]));
    const step: StepProvenanceIds = { sessionId, head, ids };
    if (ids.size === 0) return step;
    const earlier = await this.#earlier(store, sessionId, head, [...ids.keys()]);
    for (const [id, o] of own.ids) {
      const used = earlier.get(id);
      if (used && used.key !== o.key) throw reused(request, o.pointer, id, used.seq);
    }
    return step;
  }

  /** A checked step was chained at `appended`: its ids are used from now on (in this replica's memory too). */
  committed(step: StepProvenanceIds, appended: ChainHead): void {
    const known = this.#sessions.get(step.sessionId);
    if (!known || !this.#at(known, step.head)) return;
    for (const [id, key] of step.ids) {
      if (known.ids.has(id)) continue;
      known.ids.set(id, { key, seq: appended.seq });
      this.#total++;
    }
    known.seq = appended.seq;
    known.entryHash = appended.entryHash;
    if (known.ids.size > this.#maxPerSession) this.#tooLarge(step.sessionId);
    else this.#trim();
  }

  /** How many sessions and ids are remembered (for tests of the bounds). */
  get size(): { sessions: number; ids: number } {
    return { sessions: this.#sessions.size, ids: this.#total };
  }

  #at(known: Remembered, head: ChainHead | null): boolean {
    return head === null ? known.seq === -1 : known.seq === head.seq && known.entryHash === head.entryHash;
  }

  /** The session's used ids as of `head`, at least those among `wanted`. */
  async #earlier(
    store: GuardianStore,
    sessionId: string,
    head: ChainHead | null,
    wanted: string[],
  ): Promise<ReadonlyMap<string, Used>> {
    const headSeq = head?.seq ?? -1;
    let known = this.#sessions.get(sessionId);
    if (known) {
      this.#sessions.delete(sessionId);
      this.#sessions.set(sessionId, known); // most recently used last
      // Chained entries never change, so ids remembered as of a later head than the step's are used at the head
      // the step will really be placed at (a step placed at an older one is retried at the newer one).
      if (this.#at(known, head) || known.seq > headSeq) return known.ids;
      if (known.seq === headSeq) {
        this.#forget(sessionId); // the same seq under another hash: read it again
        known = undefined;
      }
    }
    if (headSeq === -1) {
      const empty: Remembered = { seq: -1, entryHash: null, ids: new Map() };
      this.#remember(sessionId, empty);
      return empty.ids;
    }
    if (!readsProvenance(store)) {
      throw new StoreError('unavailable', 'this store cannot say which provenance ids the session used');
    }
    if (this.#oversized.has(sessionId)) {
      this.#oversized.delete(sessionId);
      this.#oversized.set(sessionId, true);
      return usedIn(await store.readProvenanceEntries(sessionId, -1, headSeq, wanted));
    }
    const after = known?.seq ?? -1;
    const read = usedIn(await store.readProvenanceEntries(sessionId, after, headSeq));
    // Other sessions' steps ran meanwhile and may have evicted this one: then it is remembered anew below.
    const kept = known !== undefined && this.#sessions.get(sessionId) === known;
    const next: Remembered = known ?? { seq: -1, entryHash: null, ids: new Map() };
    let added = 0;
    for (const [id, used] of read) {
      if (next.ids.has(id)) continue;
      next.ids.set(id, used);
      added++;
    }
    next.seq = headSeq;
    next.entryHash = head!.entryHash;
    if (!kept) this.#remember(sessionId, next);
    else if (next.ids.size > this.#maxPerSession) {
      this.#total += added;
      this.#tooLarge(sessionId);
    } else {
      this.#total += added;
      this.#trim();
    }
    return next.ids;
  }

  #remember(sessionId: string, known: Remembered): void {
    if (known.ids.size > this.#maxPerSession) {
      this.#oversized.set(sessionId, true);
      this.#trimOversized();
      return;
    }
    this.#sessions.set(sessionId, known);
    this.#total += known.ids.size;
    this.#trim();
  }

  #tooLarge(sessionId: string): void {
    this.#forget(sessionId);
    this.#oversized.set(sessionId, true);
    this.#trimOversized();
  }

  #forget(sessionId: string): void {
    const known = this.#sessions.get(sessionId);
    if (!known) return;
    this.#total -= known.ids.size;
    this.#sessions.delete(sessionId);
  }

  #trim(): void {
    for (const sessionId of this.#sessions.keys()) {
      if (this.#total <= this.#maxIds) return;
      this.#forget(sessionId);
    }
  }

  #trimOversized(): void {
    for (const sessionId of this.#oversized.keys()) {
      if (this.#oversized.size <= MAX_OVERSIZED) return;
      this.#oversized.delete(sessionId);
    }
  }
}

/** The ids the rows' payloads carry, each with its first Provenance object and the entry that carried it. */
function usedIn(rows: { seq: number; paramsJcs: string }[]): Map<string, Used> {
  const used = new Map<string, Used>();
  for (const row of rows) {
    const payload = (JSON.parse(row.paramsJcs) as { payload?: unknown }).payload;
    for (const p of payloadProvenance(payload)) {
      if (!used.has(p.provenance_id)) used.set(p.provenance_id, { key: recordKey(p.object), seq: row.seq });
    }
  }
  return used;
}
