// Typed reads of a step's payload members: what is not of the expected type reads as absent.
import { isObject } from '../../json.ts';

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** `sha256:abc` for `{algorithm: "SHA-256", value: "abc"}` or the string form; null when absent. */
export function normaliseDigest(d: unknown): string | null {
  if (typeof d === 'string') {
    const m = /^([A-Za-z0-9-]+):(.+)$/.exec(d);
    return m ? `${m[1].toLowerCase().replace(/-/g, '')}:${m[2].toLowerCase()}` : d.toLowerCase();
  }
  if (isObject(d) && typeof d.value === 'string') {
    const alg = typeof d.algorithm === 'string' ? d.algorithm.toLowerCase().replace(/-/g, '') : 'sha256';
    return `${alg}:${d.value.toLowerCase()}`;
  }
  return null;
}
