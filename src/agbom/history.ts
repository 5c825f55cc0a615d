// Reading a session's AgBOM history back from the store: the version in force at a chain entry (what
// `guardian agbom export --at SEQ` and the admin route render), the comparison of two points (`agbom diff`), and
// the check that every stored version is what its chain entry carried (`guardian audit verify`).
import type { AgbomStore, GuardianStore } from '../store/types.ts';
import { agbomAt, listAgbomVersions } from './versions.ts';
import { compareDocuments, proposeAgbom, type AgbomComparison } from './change.ts';
import { canonicalJson } from '../chain/index.ts';
import { agbomHash, type AgbomDocument, documentOf, isObject, type JsonObject } from './model.ts';
import type { RenderInput } from './renderers/index.ts';
import { inspectTerms } from './tracker.ts';

/** What reading a session's AgBOM history needs of the store. */
export type AgbomHistoryStore = AgbomStore & Pick<GuardianStore, 'getSession'>;

export class AgbomNotFoundError extends Error {}

/** The entry timestamp as hashed (params.timestamp, ACS §8.2), else when it was stored, for the rendering. */
async function entryTimestamp(store: AgbomHistoryStore, sessionId: string, seq: number): Promise<string> {
  const time = await store.getEntryTime(sessionId, seq);
  return time?.timestamp ?? (time?.createdAt ?? new Date(0)).toISOString();
}

/**
 * The AgBOM of `sessionId` as of chain entry `atSeq` (the latest when omitted), ready to render. Throws
 * AgbomNotFoundError when the session is unknown or had no adopted AgBOM by then.
 */
export async function agbomVersionAt(
  store: AgbomHistoryStore,
  sessionId: string,
  atSeq?: number,
  generator: RenderInput['generator'] = { name: 'acs-guardian', version: '0.1.0' },
): Promise<RenderInput> {
  if (!(await store.getSession(sessionId))) throw new AgbomNotFoundError(`no session ${sessionId}`);
  const at = await agbomAt(store, sessionId, atSeq);
  if (!at.document || !at.version) {
    throw new AgbomNotFoundError(
      `session ${sessionId} has no adopted AgBOM${atSeq === undefined ? '' : ` at or before seq ${atSeq}`}`,
    );
  }
  return {
    document: at.document,
    agbomHash: agbomHash(at.document),
    sessionId,
    seq: at.version.seq,
    timestamp: await entryTimestamp(store, sessionId, at.version.seq),
    generator,
  };
}

/** What changed between the AgBOM in force at `fromSeq` and at `toSeq` (an empty AgBOM before the first). */
export async function agbomChanges(
  store: AgbomHistoryStore,
  sessionId: string,
  fromSeq: number,
  toSeq: number,
): Promise<AgbomComparison & { from: string | null; to: string | null }> {
  if (!(await store.getSession(sessionId))) throw new AgbomNotFoundError(`no session ${sessionId}`);
  const from = (await agbomAt(store, sessionId, fromSeq)).document;
  const to = (await agbomAt(store, sessionId, toSeq)).document;
  const comparison = compareDocuments(from, to ?? documentOf(from?.agent_id ?? '', []));
  return { ...comparison, from: from ? agbomHash(from) : null, to: to ? agbomHash(to) : null };
}

export interface AgbomMismatch {
  seq: number;
  message: string;
}

function decisionOf(resultJcs: string | null): string | null {
  if (resultJcs === null) return null;
  const r = JSON.parse(resultJcs) as unknown;
  return isObject(r) && typeof r.decision === 'string' ? r.decision : null;
}

/**
 * Re-derives every AgBOM version of a session from the agbom/* chain entries that carried it (their params as
 * stored, folded in chain order with the code the pipeline runs) and reports each stored version that differs:
 * missing, unbound (seq / entry_hash), or with another document, diff, agbom_hash or adoption.
 */
export async function verifyAgbomVersions(store: AgbomHistoryStore, sessionId: string): Promise<AgbomMismatch[]> {
  const session = await store.getSession(sessionId);
  if (!session) return [];
  const entries = await store.readAgbomEntries(sessionId);
  const stored = new Map((await listAgbomVersions(store, sessionId)).map((v) => [v.seq, v]));
  const terms = inspectTerms(session.hello);
  const out: AgbomMismatch[] = [];
  let current: AgbomDocument | null = null;
  for (const e of entries) {
    const { seq } = e;
    const v = stored.get(seq);
    stored.delete(seq);
    const params = JSON.parse(e.paramsJcs) as JsonObject;
    const payload = isObject(params.payload) ? params.payload : {};
    const proposed = proposeAgbom(current, payload, session.agentId, {
      requireRegistrationProvenance: terms.provenance,
    });
    const decision = decisionOf(e.resultJcs);
    const adopted = (decision === 'allow' || decision === 'modify') && proposed.problems.length === 0;
    if (adopted) current = proposed.document;
    if (!v) {
      // A version is written with every agbom/* entry committed by a Guardian that keeps AgBOMs.
      out.push({ seq, message: `the ${e.stepType} entry at seq ${seq} has no stored AgBOM version` });
      continue;
    }
    const problems: string[] = [];
    if (v.entryHash !== e.entryHash) problems.push('entry_hash');
    if (v.method !== e.stepType) problems.push('method');
    if (v.form !== proposed.form) problems.push('form');
    if (v.agbomHash !== proposed.hash) problems.push('agbom_hash');
    if (canonicalJson(v.diff) !== canonicalJson(proposed.diff)) problems.push('diff');
    if (v.form === 'full' && canonicalJson(v.document) !== canonicalJson(proposed.document)) problems.push('document');
    if (v.adopted !== adopted) problems.push('adopted');
    if (problems.length > 0) {
      out.push({
        seq,
        message: `stored AgBOM version at seq ${seq} differs from its chain entry in ${problems.join(', ')}: edited`,
      });
    }
  }
  for (const v of stored.values()) {
    out.push({ seq: v.seq, message: `AgBOM version at seq ${v.seq} has no agbom/* chain entry: inserted` });
  }
  return out;
}
