// Stage 1 — decode: bytes → JSON value (dispatch step 1). Invalid UTF-8 or JSON → -32700 with id null.
// Nesting is measured on the raw text before parsing, so a 10k-deep body costs one linear scan and nothing else.
import { AcsError, AcsErrorCode } from '../errors.ts';

export const DEFAULT_MAX_DEPTH = 64;

/** Deepest array/object nesting of JSON text (brackets inside strings ignored). Stops early past `limit`. */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

/** True when `text` holds at most `limit` opening brackets (inside strings too): then no nesting can exceed it. */
function fewBrackets(text: string, limit: number): boolean {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      if (++count > limit) return false;
    }
  }
  return true;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeMessage(body: Uint8Array | string, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = utf8.decode(body);
    } catch {
      throw new AcsError(AcsErrorCode.ParseError, 'invalid_utf8', 'the body is not valid UTF-8');
    }
  }
  // The bracket count is a native scan; the depth walk (a JS loop over every character) only runs past it.
  if (!fewBrackets(text, maxDepth) && jsonNestingDepth(text, maxDepth) > maxDepth) {
    throw new AcsError(
      AcsErrorCode.InvalidRequest,
      'nesting_too_deep',
      `JSON nesting deeper than ${maxDepth} levels is refused`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AcsError(
      AcsErrorCode.ParseError,
      'invalid_json',
      `the body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
