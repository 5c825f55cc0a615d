// Checks and serialisation of what callers hand the store, shared by every concern: a value that cannot be
// stored is refused with `invalid_input` before it reaches a batch or the database.
import { canonicalJson } from '../chain/index.ts';
import { StoreError } from './errors.ts';
import type { Json } from '../json.ts';

/** Rows a paged read returns at most. */
const MAX_PAGE = 10_000;

/** A caller's page size, clamped to 1…MAX_PAGE (default 1000). */
export function pageLimit(limit: number | undefined): number {
  return Math.min(Math.max(1, limit ?? 1000), MAX_PAGE);
}

export function parseJcs(text: string): Json {
  return JSON.parse(text) as Json;
}

export function jcsOf(value: unknown, what: string): string {
  try {
    return canonicalJson(value);
  } catch (err) {
    throw new StoreError(
      'invalid_input',
      `${what} is not a JSON value: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * JSON text of the policy session state. Not canonical: nothing hashes or signs the state, it is only read
 * back, so the key sort JCS does at every level would buy nothing.
 */
export function stateTextOf(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new StoreError(
      'invalid_input',
      `state is not a JSON value: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (text === undefined) throw new StoreError('invalid_input', 'state is not a JSON value');
  return text;
}

/**
 * JSON texts as one `json` array parameter: the texts go out as they are, where a text[] parameter would have
 * the driver escape every quote of every element. Postgres' json_array_elements gives each element back as its
 * exact text. A null is written as JSON null: the caller says apart which elements are absent.
 */
export function jsonTextsArray(texts: (string | null)[]): string {
  return '[' + texts.map((t) => t ?? 'null').join(',') + ']';
}

export function requireId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 512) {
    throw new StoreError('invalid_input', `${what} must be a non-empty string of at most 512 characters`);
  }
  return value;
}

export function isValidDate(d: unknown): d is Date {
  return d instanceof Date && !Number.isNaN(d.getTime());
}

/** A timestamp column read through a raw statement (drivers give a Date; a string is parsed). */
export function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

/** A nullable text column read through a raw statement. */
export function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}
