// A session's AgBOM versions with their types (the store keeps them as uninterpreted JSON) and the AgBOM they
// make at a chain entry: the latest adopted full version with the adopted diffs after it applied in chain order.
import {
  type AgbomQuery,
  type AgbomVersionRecord,
  type AgbomVersionWrite,
  agbomVersionsInForce,
  listAgbomVersions as listStoredVersions,
} from '../store/agbom/versions.ts';
import { type AgbomDiff, type AgbomProblem, applyDiff } from './change.ts';
import type { AgbomDocument } from './model.ts';

export type { AgbomQuery } from '../store/agbom/versions.ts';
export type AgbomVersionDraft = AgbomVersionWrite<AgbomDocument, AgbomDiff, AgbomProblem>;
export type AgbomVersion = AgbomVersionRecord<AgbomDocument, AgbomDiff, AgbomProblem>;

/** A session's versions in chain order, up to `atSeq` (inclusive) when given. */
export async function listAgbomVersions(query: AgbomQuery, sessionId: string, atSeq?: number): Promise<AgbomVersion[]> {
  // The store returns what src/agbom wrote (tracker.ts): the JSON has these shapes.
  return (await listStoredVersions(query, sessionId, atSeq)) as AgbomVersion[];
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
  query: AgbomQuery,
  sessionId: string,
  atSeq?: number,
): Promise<{ document: AgbomDocument | null; version: AgbomVersion | null }> {
  const versions = (await agbomVersionsInForce(query, sessionId, atSeq)) as AgbomVersion[];
  const adopted = versions.filter((v) => v.adopted);
  return { document: foldVersions(versions), version: adopted.at(-1) ?? null };
}
