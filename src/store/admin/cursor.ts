// Opaque keyset cursors for the operator listings: base64url of a JSON array of the sort key of the last row
// seen. Timestamps travel as epoch microseconds (text), the precision Postgres stores, so a page boundary
// never falls between two rows that a millisecond Date would make equal.
import { StoreError } from '../errors.ts';

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** The key of `cursor`, checked against `shape` ('s' string, 'n' integer, 'u' microseconds as digits). */
export function decodeCursor(cursor: string, shape: readonly ('s' | 'n' | 'u')[]): (string | number)[] {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = null;
  }
  const ok =
    Array.isArray(key) &&
    key.length === shape.length &&
    key.every((v, i) =>
      shape[i] === 'n'
        ? Number.isSafeInteger(v)
        : typeof v === 'string' && (shape[i] === 's' || /^-?[0-9]{1,20}$/.test(v)),
    );
  if (!ok) throw new StoreError('invalid_input', 'cursor is not one this listing returned');
  return key as (string | number)[];
}
