// The state of a session before its first step, and the intent a step fixes (§8.4).
import { isObject, type Json } from '../../json.ts';
import { str, stringList } from './payload-fields.ts';
import type { IntentState, SessionState } from './types.ts';

export function initialSessionState(init: {
  session_id: string;
  agent_id: string;
  parent_session_id?: string | null;
  intent?: Json;
  policy_mode?: string | null;
}): SessionState {
  const state: SessionState = {
    version: 1,
    session_id: init.session_id,
    agent_id: init.agent_id,
    parent_session_id: init.parent_session_id ?? null,
    policy_mode: init.policy_mode ?? null,
    intent: null,
    intent_extensions: [],
    intent_change_attempts: 0,
    closed: false,
    step_index: 0,
    turn: { id: null, index: 0, step_count: 0, tool_call_count: 0, open: false },
    counters: {
      steps_total: 0,
      steps_by_method: {},
      tool_calls_total: 0,
      tool_calls_by_tool: {},
      turns_total: 0,
      deferrals: 0,
      asks: 0,
      denials: 0,
      subagents_started: 0,
    },
    provenance: {
      summary: {
        origins_seen: [],
        entry_count: 0,
        entry_count_by_origin: {},
        earliest_step_id_by_origin: {},
        max_lineage_depth: 0,
      },
      records: {},
      recent_records: {},
      record_count: 0,
    },
    taint: { earliest_untrusted: null, latest_untrusted: null, untrusted_steps: 0 },
    recent_steps: [],
    recent_tool_calls: [],
    approvals: [],
    skills: { registered: {}, loaded: [] },
  };
  if (init.intent !== undefined && init.intent !== null) {
    const parsed = parseIntent(init.intent, 'session-init');
    if (parsed) state.intent = parsed;
  }
  return state;
}

export function parseIntent(intent: Json, stepId: string): IntentState | null {
  if (!isObject(intent)) return null;
  const parsed = stringList(intent.parsed);
  const out: IntentState = { parsed, scope_mode: str(intent.scope_mode) ?? null, established_step_id: stepId };
  if (intent.raw !== undefined) out.raw = intent.raw;
  if (intent.parser_provenance !== undefined) out.parser_provenance = intent.parser_provenance;
  return out;
}
