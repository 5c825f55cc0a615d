// A session state read back from the store: recognised, and brought to the form this code writes.
import { isObject } from '../../json.ts';
import type { RecentToolCall, SessionState } from './types.ts';

/**
 * A state read back from the store in the form this code writes. States written before recent_tool_calls
 * became `[tool, at_ms]` pairs hold `{step_id, tool, at_ms}` objects; the windows count the same calls either
 * way. Returns `state` itself when nothing is to convert (the per-step path reads its own states).
 */
export function upgradeSessionState(state: SessionState): SessionState {
  const calls = state.recent_tool_calls as unknown[];
  if (!Array.isArray(calls)) return { ...state, recent_tool_calls: [] };
  if (calls.every((c) => Array.isArray(c))) return state;
  const pairs: RecentToolCall[] = [];
  for (const c of calls) {
    if (Array.isArray(c)) pairs.push([String(c[0]), Number(c[1]) || 0]);
    else if (isObject(c))
      pairs.push([typeof c.tool === 'string' ? c.tool : '', typeof c.at_ms === 'number' ? c.at_ms : 0]);
  }
  return { ...state, recent_tool_calls: pairs };
}

/** Type guard for state read back from the store (fail closed: anything else is rebuilt by replay). */
export function isSessionState(v: unknown): v is SessionState {
  return (
    isObject(v) && v.version === 1 && typeof v.session_id === 'string' && isObject(v.provenance) && isObject(v.counters)
  );
}
