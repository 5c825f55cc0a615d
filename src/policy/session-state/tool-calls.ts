// The tool-call history the rate windows count (policy/input.ts), its columnar layout, and which steps are tool calls.
import { isObject, type JsonObject } from '../../json.ts';
import { appendBounded } from './copy-on-write.ts';
import { str } from './payload-fields.ts';
import type { RecentToolCall } from './types.ts';

/**
 * A tool-call history as columns: the index of each call's tool in `names`, and each call's time. Every evaluation
 * counts the minute and hour windows over the whole history (policy/input.ts), so it is laid out to be walked
 * fast, not as `[tool, at_ms]` pairs scattered over the heap. Each step's history is the last one shifted and
 * pushed, so successive histories share append-only columns and each one is a range of them.
 */
export interface ToolCallColumns {
  /** Tool names in order of first sighting; may name tools no longer in the history. Append-only. */
  readonly names: readonly string[];
  /** Append-only, shared with the histories before and after this one; this history is [start, end). */
  readonly nameAt: readonly number[];
  readonly atMs: readonly number[];
  readonly start: number;
  readonly end: number;
}

/** Columns per history array. Sound because a history is never changed once built (the state is copy-on-write). */
const columnsOfHistory = new WeakMap<readonly RecentToolCall[], ToolCallColumns>();

/** The columns of `calls`, built on first use (a history read back from the store) and kept with it. */
export function toolCallColumns(calls: readonly RecentToolCall[]): ToolCallColumns {
  let columns = columnsOfHistory.get(calls);
  if (columns === undefined) {
    const names: string[] = [];
    // Plain arrays (packed small integers, packed doubles): later histories push onto them, which a typed array
    // cannot do, and a typed array over 64 bytes allocates its buffer outside the heap (costly when copied per step).
    const nameAt: number[] = [];
    const atMs: number[] = [];
    // Consecutive calls often name the same tool: remember the last one's position.
    let lastName: string | undefined;
    let lastK = -1;
    for (let i = 0; i < calls.length; i++) {
      const name = calls[i][0];
      let k = name === lastName ? lastK : names.indexOf(name);
      if (k < 0) k = names.push(name) - 1;
      lastName = name;
      lastK = k;
      nameAt.push(k);
      atMs.push(+calls[i][1]);
    }
    columns = { names, nameAt, atMs, start: 0, end: calls.length };
    columnsOfHistory.set(calls, columns);
  }
  return columns;
}

/** appendBounded for the tool-call history; when the old history has columns, the new one's extend them. */
export function appendToolCall(calls: readonly RecentToolCall[], call: RecentToolCall, keep: number): RecentToolCall[] {
  const next = appendBounded(calls, call, keep);
  const before = columnsOfHistory.get(calls);
  // Names of tools gone from the window pile up in a long session: past twice the history, build afresh.
  if (before === undefined || next.length === 0 || before.names.length > 2 * next.length) return next;
  let nameAt = before.nameAt as number[];
  let atMs = before.atMs as number[];
  let start = before.start + calls.length + 1 - next.length;
  // Copy the kept calls when another history already extends these columns (a step evaluated twice from one
  // state), or when the calls before the window outnumber it (so the columns stay within twice the history).
  if (before.end !== nameAt.length || start > next.length) {
    nameAt = nameAt.slice(start, before.end);
    atMs = atMs.slice(start, before.end);
    start = 0;
  }
  const names = before.names as string[];
  let k = names.indexOf(call[0]);
  if (k < 0) k = names.push(call[0]) - 1;
  nameAt.push(k);
  atMs.push(+call[1]);
  columnsOfHistory.set(next, { names, nameAt, atMs, start, end: nameAt.length });
  return next;
}

export function toolOf(
  method: string,
  payload: JsonObject,
): { tool?: string; capability?: string; isToolCall: boolean } {
  if (method === 'steps/toolCallRequest') {
    const tool = isObject(payload.tool) ? str(payload.tool.name) : undefined;
    return { tool, capability: str(payload.capability), isToolCall: true };
  }
  // Wrapped MCP (§12): the intact MCP message sits in payload; tools/call names the tool in params.name.
  if ((method.startsWith('protocols/MCP/') || method.startsWith('wrapped:mcp')) && method.endsWith('tools/call')) {
    const tool = isObject(payload.params) ? str(payload.params.name) : undefined;
    return { tool, isToolCall: true };
  }
  return { isToolCall: false };
}

/** The last timestamp parsed and its value: a step's timestamp is parsed by the state fold and again by the input. */
let lastParsedTimestamp = '';
let lastParsedMs = NaN;

/** `Date.parse(ts)` as a finite number of ms, 0 when absent or unparseable. */
export function timestampMs(ts: string | undefined): number {
  if (!ts) return 0;
  if (ts !== lastParsedTimestamp) {
    lastParsedMs = Date.parse(ts);
    lastParsedTimestamp = ts;
  }
  return Number.isFinite(lastParsedMs) ? lastParsedMs : 0;
}
