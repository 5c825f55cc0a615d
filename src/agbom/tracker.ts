// The AgBOM side of one step in the request pipeline: the session's current AgBOM (read once, then kept per
// process against the chain head it is valid at), what an agbom/* step proposes, the `input.agbom` facts policies
// decide on, and the version the step commits with its chain entry (src/store/agbom). A subagent session that has
// reported no AgBOM of its own sees its parent's (ACS Inspect: a subagent is a session of its own; docs/agbom.md).
import type { Json } from '../json.ts';
import { RecentMap, type RecentMapLimits } from '../recent-map.ts';
import type { AgbomStore, ChainHead, GuardianStore, SessionRecord } from '../store/types.ts';
import { agbomAt, type AgbomVersionDraft } from './versions.ts';
import { compareDocuments, proposeAgbom, type ProposedAgbom } from './change.ts';
import { type AgbomDocument, agbomHash, type JsonObject } from './model.ts';

/** What the pipeline needs of a session row. */
export type AgbomSession = Pick<SessionRecord, 'id' | 'agentId' | 'hello' | 'parentSessionId'>;

/** One step's AgBOM context. */
export interface AgbomStep {
  /** `input.agbom` (docs/policy-authoring.md, docs/agbom.md). */
  facts: Json;
  /** For agbom/* steps: the version to commit with the entry, given the delivered disposition. */
  version(decision: string): AgbomVersionDraft | undefined;
  /** After the commit: the AgBOM as the step left it, valid at the new head. */
  committed(head: ChainHead, decision: string): void;
}

interface Cached {
  headHash: string | null;
  document: AgbomDocument | null;
  seq: number | null;
  /** `documentFacts` of the document, made once per version (it hashes the document). */
  facts?: JsonObject | null;
}

/**
 * ACS-Inspect terms of a session, from its negotiated hello; `provenance`: the session is bound to ACS-Provenance
 * (accepted, with a deterministic producer).
 */
export function inspectTerms(hello: Json): { inspect: boolean; dynamic: boolean; provenance: boolean } {
  const h = hello as { client?: { provenance_producer?: string }; server?: { profiles_accepted?: string[] } } | null;
  const accepted = h?.server?.profiles_accepted ?? [];
  return {
    inspect: accepted.includes('acs-inspect') || accepted.includes('acs-inspect-dynamic'),
    dynamic: accepted.includes('acs-inspect-dynamic'),
    provenance: accepted.includes('acs-provenance') && h?.client?.provenance_producer === 'deterministic',
  };
}

/** A document as policies read it: components keyed by id (set lookups in Rego). */
function documentFacts(doc: AgbomDocument, seq: number | null): JsonObject {
  const components: JsonObject = {};
  for (const c of doc.components) components[c.id] = c as unknown as Json;
  return { agent_id: doc.agent_id, agbom_hash: agbomHash(doc), seq, components };
}

function proposalFacts(p: ProposedAgbom, current: AgbomDocument | null): JsonObject {
  const change = compareDocuments(current, p.document);
  return {
    ...documentFacts(p.document, null),
    form: p.form,
    reported_hash: p.reportedHash,
    problems: p.problems as unknown as Json,
    change: change as unknown as Json,
  };
}

/** What the tracker reads of the store. */
export type AgbomTrackerStore = Pick<AgbomStore, 'agbomVersionsInForce'>;

export class AgbomTracker {
  readonly #store: AgbomTrackerStore;
  /** Bounded as the pipeline's session cache is: agents come and go, and a dropped session costs one read. */
  readonly #cache: RecentMap<Cached>;

  constructor(store: AgbomTrackerStore, limits: Partial<RecentMapLimits> = {}) {
    this.#store = store;
    this.#cache = new RecentMap({
      ...limits,
      maxEntries: limits.maxEntries ?? 2_048,
      maxIdleMs: limits.maxIdleMs ?? 120_000,
    });
  }

  /** The session's current AgBOM at `head` (the head the step is evaluated against). */
  async current(session: AgbomSession, head: ChainHead | null): Promise<Cached> {
    const headHash = head?.entryHash ?? null;
    const hit = this.#cache.get(session.id);
    if (hit && hit.headHash === headHash) return hit;
    let found: Cached = { headHash, document: null, seq: null };
    if (head !== null) {
      const at = await agbomAt(this.#store, session.id, head.seq);
      found = { headHash, document: at.document, seq: at.version?.seq ?? null };
    }
    if (found.document === null && session.parentSessionId !== null) {
      const parent = await agbomAt(this.#store, session.parentSessionId);
      found = { headHash, document: parent.document, seq: null };
    }
    this.#cache.set(session.id, found);
    return found;
  }

  async step(
    session: AgbomSession,
    head: ChainHead | null,
    method: string,
    payload: Record<string, unknown>,
  ): Promise<AgbomStep> {
    const current = await this.current(session, head);
    const { facts, proposed } = agbomStepFacts(session, current, method, payload);
    if (!proposed) {
      return {
        facts,
        version: () => undefined,
        committed: (h) => this.#cache.set(session.id, { ...current, headHash: h.entryHash }),
      };
    }
    const adopts = (decision: string) => adoptsProposal(proposed, decision);
    return {
      facts,
      version: (decision) => ({
        method,
        form: proposed.form,
        adopted: adopts(decision),
        document: proposed.form === 'full' ? proposed.document : null,
        diff: proposed.diff,
        agbomHash: proposed.hash,
        reportedHash: proposed.reportedHash,
        problems: proposed.problems,
      }),
      committed: (h, decision) =>
        this.#cache.set(
          session.id,
          adopts(decision)
            ? { headHash: h.entryHash, document: proposed.document, seq: h.seq }
            : { ...current, headHash: h.entryHash },
        ),
    };
  }
}

/** Whether a proposed version becomes the session's AgBOM: the delivered disposition let it, and it is sound. */
export function adoptsProposal(proposed: ProposedAgbom, decision: string): boolean {
  return (decision === 'allow' || decision === 'modify') && proposed.problems.length === 0;
}

/**
 * `input.agbom` of one step given the AgBOM in force before it (`current`: its document and the seq of the version
 * it came from), and for an agbom/* step what it proposes. The live pipeline and replay both build it here.
 */
export function agbomStepFacts(
  session: Pick<AgbomSession, 'agentId' | 'hello'>,
  current: { document: AgbomDocument | null; seq: number | null; facts?: JsonObject | null },
  method: string,
  payload: Record<string, unknown>,
): { facts: JsonObject; proposed: ProposedAgbom | null } {
  const terms = inspectTerms(session.hello);
  const facts: JsonObject = {
    negotiated: terms.inspect,
    dynamic: terms.dynamic,
    current: (current.facts ??= current.document ? documentFacts(current.document, current.seq) : null),
  };
  if (!method.startsWith('agbom/')) return { facts, proposed: null };
  const proposed = proposeAgbom(current.document, payload as JsonObject, session.agentId, {
    requireRegistrationProvenance: terms.provenance,
  });
  facts.proposed = proposalFacts(proposed, current.document);
  return { facts, proposed };
}

const trackers = new WeakMap<object, AgbomTracker>();

function keepsAgbom(store: GuardianStore): store is GuardianStore & AgbomTrackerStore {
  return typeof (store as Partial<AgbomTrackerStore>).agbomVersionsInForce === 'function';
}

/** The tracker of a store that keeps AgBOM versions (every durable store does); null for one that does not. */
export function agbomTrackerOf(store: GuardianStore): AgbomTracker | null {
  if (!keepsAgbom(store)) return null;
  let t = trackers.get(store);
  if (!t) {
    t = new AgbomTracker(store);
    trackers.set(store, t);
  }
  return t;
}
