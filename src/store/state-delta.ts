// A step's change to the session state as a small JSON patch, so the store need not rewrite the whole state (it
// grows with the session, and with provenance) on every step: each entry row carries its step's patch, and the
// session row holds a full state every few steps (prepare.ts, sessions.state_seq).
//
// The diff leans on the policy state being copy-on-write (src/policy/session-state/): a member that is the
// same object as before is unchanged, so only the paths a step touched are walked. The patch is exact on the
// JSON projection: applied to JSON.parse(JSON.stringify(base)) it gives JSON.parse(JSON.stringify(next)), member
// order included (when an object's order cannot be reproduced by edits, the object is replaced whole).
//
// Patch forms (arrays, so member order survives JSON):
//   ['=', value]                       the value, whole
//   ['o', [[key, patch]…], [key…]]     an object: members set or patched (new ones appended), then members deleted
//   ['a', shift, [[i, patch]…], tail]  an array: drop `shift` leading elements, patch elements by index, push `tail`
import { isPlainObject } from '../json.ts';

export type StatePatch =
  | ['=', unknown]
  | ['o', [string, StatePatch][], string[]]
  | ['a', number, [number, StatePatch][], unknown[]];

/** Shift candidates tried before an array falls back to element-wise patches. */
const MAX_SHIFT_CANDIDATES = 8;

/** Members JSON.stringify writes: undefined, functions and symbols are skipped. */
function jsonKeys(o: Record<string, unknown>): string[] {
  return Object.keys(o).filter((k) => !skipped(o[k]));
}

const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/** The order JS gives members inserted in `keys` order: array-index keys first, ascending, then the rest. */
function insertionOrder(keys: string[]): string[] {
  const indices = keys.filter((k) => ARRAY_INDEX.test(k) && Number(k) < 2 ** 32 - 1);
  if (indices.length === 0) return keys;
  const others = keys.filter((k) => !(ARRAY_INDEX.test(k) && Number(k) < 2 ** 32 - 1));
  return [...indices.sort((x, y) => Number(x) - Number(y)), ...others];
}

function sameOrder(x: string[], y: string[]): boolean {
  return x.length === y.length && x.every((k, i) => k === y[i]);
}

/** A value JSON.stringify skips as an object member. */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function diffObject(a: Record<string, unknown>, b: Record<string, unknown>): StatePatch | undefined {
  // The usual copy-on-write edit keeps every member in place: the same keys in the same order, some values new.
  const aAll = Object.keys(a);
  const bAll = Object.keys(b);
  if (aAll.length === bAll.length) {
    const sets: [string, StatePatch][] = [];
    let i = 0;
    for (; i < bAll.length; i++) {
      const k = bAll[i];
      if (k !== aAll[i]) break;
      const av = a[k];
      const bv = b[k];
      if (av === bv) continue;
      if (skipped(av) || skipped(bv)) break;
      const sub = stateDiff(av, bv);
      if (sub) sets.push([k, sub]);
    }
    if (i === bAll.length) return sets.length === 0 ? undefined : ['o', sets, []];
  }
  const aKeys = jsonKeys(a);
  const bKeys = jsonKeys(b);
  const sets: [string, StatePatch][] = [];
  const kept: string[] = [];
  const added: string[] = [];
  for (const k of bKeys) {
    if (Object.hasOwn(a, k) && a[k] !== undefined) {
      kept.push(k);
      const sub = stateDiff(a[k], b[k]);
      if (sub) sets.push([k, sub]);
    } else {
      added.push(k);
      sets.push([k, ['=', b[k]]]);
    }
  }
  const keptSet = new Set(kept);
  const deleted = aKeys.filter((k) => !keptSet.has(k));
  // Edits keep a's order for kept members and append new ones; any other order needs the object whole.
  if (!sameOrder(insertionOrder([...aKeys.filter((k) => keptSet.has(k)), ...added]), bKeys)) return ['=', b];
  if (sets.length === 0 && deleted.length === 0) return undefined;
  return ['o', sets, deleted];
}

function diffArray(a: unknown[], b: unknown[]): StatePatch | undefined {
  // A bounded queue (recent steps, tool calls) moves by dropping its head and pushing: find where b starts in a.
  let tried = 0;
  for (let s = 0; s < a.length && tried < MAX_SHIFT_CANDIDATES; s++) {
    if (a[s] !== b[0]) continue;
    tried++;
    const overlap = a.length - s;
    if (overlap > b.length) continue;
    let i = 1;
    while (i < overlap && a[s + i] === b[i]) i++;
    if (i === overlap) return s === 0 && overlap === b.length ? undefined : ['a', s, [], b.slice(overlap)];
  }
  const shift = Math.max(0, a.length - b.length);
  const overlap = a.length - shift;
  const edits: [number, StatePatch][] = [];
  for (let i = 0; i < overlap; i++) {
    const sub = stateDiff(a[shift + i], b[i]);
    if (sub) edits.push([i, sub]);
  }
  if (shift === 0 && edits.length === 0 && overlap === b.length) return undefined;
  return ['a', shift, edits, b.slice(overlap)];
}

/**
 * The patch that turns `base` into `next` (undefined: no change), both JSON values. Values are compared by
 * identity below the top: a member whose object is the one `base` held is taken as unchanged.
 */
export function stateDiff(base: unknown, next: unknown): StatePatch | undefined {
  if (base === next) return undefined;
  if (Array.isArray(base) && Array.isArray(next)) return diffArray(base, next);
  if (isPlainObject(base) && isPlainObject(next)) return diffObject(base, next);
  return ['=', next];
}

function malformed(): never {
  throw new TypeError('malformed session state patch');
}

/** Sets an own member, `__proto__` included (a plain assignment would set the prototype). */
function setMember(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__')
    Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/** Applies a patch to a parsed JSON value, editing it in place where it can; returns the result. */
export function applyStatePatch(base: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) malformed();
  switch (patch[0]) {
    case '=':
      return patch[1];
    case 'o': {
      const [, sets, deleted] = patch as [string, unknown, unknown];
      if (!isPlainObject(base) || !Array.isArray(sets) || !Array.isArray(deleted)) malformed();
      for (const k of deleted) {
        if (typeof k !== 'string') malformed();
        delete base[k];
      }
      for (const set of sets) {
        if (!Array.isArray(set) || typeof set[0] !== 'string') malformed();
        const k = set[0];
        setMember(base, k, applyStatePatch(Object.hasOwn(base, k) ? base[k] : undefined, set[1]));
      }
      return base;
    }
    case 'a': {
      const [, shift, edits, tail] = patch as [string, unknown, unknown, unknown];
      if (
        !Array.isArray(base) ||
        !Number.isInteger(shift) ||
        (shift as number) < 0 ||
        (shift as number) > base.length ||
        !Array.isArray(edits) ||
        !Array.isArray(tail)
      )
        malformed();
      const out = shift === 0 ? base : base.slice(shift as number);
      for (const edit of edits) {
        if (!Array.isArray(edit) || !Number.isInteger(edit[0]) || edit[0] < 0 || edit[0] >= out.length) malformed();
        out[edit[0] as number] = applyStatePatch(out[edit[0] as number], edit[1]);
      }
      for (const v of tail) out.push(v);
      return out;
    }
    default:
      return malformed();
  }
}
