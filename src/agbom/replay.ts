// `input.agbom` for replayed steps (docs/replay.md, docs/agbom.md): the AgBOM a recorded step was evaluated
// against is rebuilt from the session's stored versions at the step's seq — the same versions the live tracker
// read — and an agbom/* step's proposal is recomputed from its params, so a policy that decides on inventory
// replays on the facts it saw live. The history is read once per session (on the thread that owns the store) and
// is plain data, so it crosses to a replay worker as it is.
import type { Json, JsonObject } from '../json.ts';
import { applyDiff } from './change.ts';
import type { AgbomDocument } from './model.ts';
import type { AgbomHistoryStore } from './history.ts';
import { agbomStepFacts, inspectTerms } from './tracker.ts';
import { type AgbomVersion, listAgbomVersions } from './versions.ts';

/** A session's AgBOM history as replay needs it. */
export interface AgbomReplayHistory {
  agentId: string;
  hello: Json;
  /** The session's versions in chain order. */
  versions: AgbomVersion[];
  /** A subagent's parent's versions (it sees its parent's AgBOM until it reports its own); null for a root. */
  parentVersions: AgbomVersion[] | null;
}

/** Reads what `AgbomReplay` needs of one session. */
export async function readAgbomReplayHistory(
  store: Pick<AgbomHistoryStore, 'listAgbomVersions'>,
  session: { id: string; agentId: string; hello: Json; parentSessionId: string | null },
): Promise<AgbomReplayHistory> {
  // Versions exist only for agbom/* steps, which only an Inspect session negotiates (a subagent's session has its
  // parent's terms): other sessions cost no read.
  if (!inspectTerms(session.hello).inspect)
    return { agentId: session.agentId, hello: session.hello, versions: [], parentVersions: null };
  return {
    agentId: session.agentId,
    hello: session.hello,
    versions: await listAgbomVersions(store, session.id),
    parentVersions: session.parentSessionId === null ? null : await listAgbomVersions(store, session.parentSessionId),
  };
}

/** Folds adopted versions in order (versions.ts foldVersions), keeping the seq of the last one folded. */
class Fold {
  document: AgbomDocument | null = null;
  seq: number | null = null;
  #next = 0;
  constructor(private readonly versions: readonly AgbomVersion[]) {}

  /** Folds every version `before` says precedes the step. Steps come in chain order, so the fold only advances. */
  advance(before: (v: AgbomVersion) => boolean): void {
    for (; this.#next < this.versions.length && before(this.versions[this.#next]); this.#next++) {
      const v = this.versions[this.#next];
      if (!v.adopted) continue;
      if (v.form === 'full') this.document = v.document;
      else if (this.document !== null) this.document = applyDiff(this.document, v.diff).document;
      this.seq = v.seq;
    }
  }
}

/** The `input.agbom` of each step of one chain, walked in chain order. */
export class AgbomReplay {
  readonly #history: AgbomReplayHistory;
  readonly #own: Fold;
  readonly #parent: Fold | null;
  #current: { document: AgbomDocument | null; seq: number | null; facts?: JsonObject | null } = {
    document: null,
    seq: null,
  };

  constructor(history: AgbomReplayHistory) {
    this.#history = history;
    this.#own = new Fold(history.versions);
    this.#parent = history.parentVersions ? new Fold(history.parentVersions) : null;
  }

  /**
   * The facts of the step at `seq`: the AgBOM in force after the versions of earlier entries; for a subagent
   * with none of its own yet, its parent's as of when the step was stored (the live tracker read the parent's
   * latest then).
   */
  factsAt(seq: number, storedAtMs: number, method: string, payload: Record<string, unknown>): Json {
    this.#own.advance((v) => v.seq < seq);
    let document = this.#own.document;
    let at = document === null ? null : this.#own.seq;
    if (document === null && this.#parent) {
      this.#parent.advance((v) => v.createdAt.getTime() <= storedAtMs);
      document = this.#parent.document;
      at = null;
    }
    // One object per AgBOM in force, so its facts (which hash the document) are made once, as the live tracker does.
    if (this.#current.document !== document || this.#current.seq !== at) this.#current = { document, seq: at };
    return agbomStepFacts(this.#history, this.#current, method, payload).facts;
  }
}
