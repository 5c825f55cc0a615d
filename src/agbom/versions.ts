// A session's AgBOM versions with their types (the store keeps them as uninterpreted JSON) and the AgBOM they
// make at a chain entry: the latest adopted full version with the adopted diffs after it applied in chain order.
import type { AgbomStore, AgbomVersionRecord, AgbomVersionWrite } from '../store/types.ts';
import { type AgbomDiff, type AgbomProblem, applyDiff } from './change.ts';
import type { AgbomDocument } from './model.ts';

export type AgbomVersionDraft = AgbomVersionWrite<AgbomDocument, AgbomDiff, AgbomProblem>;
export type AgbomVersion = AgbomVersionRecord<AgbomDocument, AgbomDiff, AgbomProblem>;

/** The store returns what src/agbom wrote (tracker.ts): its JSON has these shapes. */
function typed(versions: AgbomVersionRecord[]): AgbomVersion[] {
  return versions as AgbomVersion[];
}

/** A session's versions in chain order, up to `atSeq` (inclusive) when given. */
export async function listAgbomVersions(
  store: Pick<AgbomStore, 'listAgbomVersions'>,
  sessionId: string,
  atSeq?: number,
): Promise<AgbomVersion[]> {
  return typed(await store.listAgbomVersions(sessionId, atSeq));
}

/** The AgBOM a version sequence results in (adopted versions folded in order); null before any adopted one. */
function foldVersions(versions: AgbomVersion[]): AgbomDocument | null {
  let doc: AgbomDocument | null = null;
  for (const v of versions) {
    if (!v.adopted) continue;
    if (v.form === 'full') doc = v.document;
    else if (doc !== null) doc = applyDiff(doc, v.diff).document;
  }
  return doc;
}

/** The session's AgBOM as of chain entry `atSeq` (the latest when omitted), and the version it came from. */
export async function agbomAt(
  store: Pick<AgbomStore, 'agbomVersionsInForce'>,
  sessionId: string,
  atSeq?: number,
): Promise<{ document: AgbomDocument | null; version: AgbomVersion | null }> {
  const versions = typed(await store.agbomVersionsInForce(sessionId, atSeq));
  const adopted = versions.filter((v) => v.adopted);
  return { document: foldVersions(versions), version: adopted.at(-1) ?? null };
}
