// Copy-on-write helpers for the state's maps and bounded arrays. A state is never mutated once returned, so
// each step copies only what it changes.

/**
 * `obj[key]` when `key` is the object's own member. State maps are keyed by client-chosen names (tool names,
 * provenance ids, skill ids): a plain index would read `Object.prototype` for `constructor` or `__proto__`.
 */
export function ownValue<T>(obj: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** A copy of `obj` with `key` set as an own member (setOwn defines it, even `__proto__`). */
export function withMember<T>(obj: Readonly<Record<string, T>>, key: string, value: T): Record<string, T> {
  // Copy, then set: a member written after a spread inside the same literal leaves the engine's fast path.
  const out = { ...obj };
  setOwn(out, key, value);
  return out;
}

/** `[...list, item]` keeping only the newest `keep` items (the bounded history arrays). */
export function appendBounded<T>(list: readonly T[], item: T, keep: number): T[] {
  if (keep <= 0) return [];
  // One copy of the kept tail (the tool-call history is 200 long: spread then slice copied it twice per call).
  const kept = list.slice(Math.max(0, list.length + 1 - keep));
  kept.push(item);
  return kept;
}

/** Sets `key` as an own member of a fresh map (plain assignment of `__proto__` would set the prototype instead). */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}
