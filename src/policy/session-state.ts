// Session state policies read (docs/policy-authoring.md): turn counters, budgets, provenance trust and lineage, taint history,
// intent and its extensions, approvals, skill registrations. Pure and deterministic — it depends only on the
// steps (and decisions) fed in, never on the clock — so replaying a chain rebuilds it byte for byte.
import { isObject, type Json, type JsonObject } from '../json.ts';

export type Trust = 'trusted' | 'unknown' | 'untrusted';
export type Origin =
  | 'user_input'
  | 'system'
  | 'tool_output'
  | 'retrieved'
  | 'agent_generated'
  | 'a2a_inbound'
  | 'external';

/** ACS §7.2 default trust by origin; `agent_generated` is the minimum over its lineage instead. */
export const DEFAULT_ORIGIN_TRUST: Readonly<Record<Exclude<Origin, 'agent_generated'>, Trust>> = {
  user_input: 'trusted',
  system: 'trusted',
  tool_output: 'untrusted',
  retrieved: 'untrusted',
  a2a_inbound: 'untrusted',
  external: 'untrusted',
};

const TRUST_RANK: Record<Trust, number> = { untrusted: 0, unknown: 1, trusted: 2 };

export function minTrust(a: Trust, b: Trust): Trust {
  return TRUST_RANK[a] <= TRUST_RANK[b] ? a : b;
}

export interface ProvenanceRecord {
  origin: string;
  source_id?: string;
  derived_from: string[];
  trust: Trust;
  /** Where it was first seen: the step (request_id), its index, the turn index, the JSON pointer in params.payload. */
  step_id: string;
  step_index: number;
  turn_index: number;
  path: string;
  lineage_depth: number;
}

export interface TaintMark {
  step_id: string;
  step_index: number;
  turn_index: number;
  turn_id: string | null;
  provenance_id: string;
  origin: string;
}

export interface RecentStep {
  step_id: string;
  index: number;
  method: string;
  turn_index: number;
  turn_id: string | null;
  timestamp: string;
  tool?: string;
  capability?: string;
  provenance_ids: string[];
  untrusted: boolean;
  decision?: string;
}

/** A tool call in the rate-window history: the tool name (`''` when unnamed) and its timestamp in ms. */
export type RecentToolCall = [tool: string, at_ms: number];

export interface ApprovalGrant {
  /** The step that raised the ASK. */
  ask_step_id: string;
  approver: { type: string; id: string };
  capabilities: string[];
  scope: 'this_request' | 'session';
  /** Optional narrowing: the grant applies only to this tool. */
  tool?: string;
  granted_at: string;
  provenance?: Json;
  /** A `this_request` grant serves exactly the next tool call (the retried request): that step's id. */
  consumed_by?: string;
}

export interface SkillRegistration {
  digest: string | null;
  step_id: string;
  declared_capabilities: string[];
  composed_skills: string[];
  approved: boolean;
}

export interface IntentState {
  raw?: Json;
  parsed: string[];
  scope_mode: string | null;
  parser_provenance?: Json;
  established_step_id: string;
}

export interface SessionState {
  version: 1;
  session_id: string;
  agent_id: string;
  parent_session_id: string | null;
  policy_mode: string | null;
  intent: IntentState | null;
  /** Capabilities granted by approvers with scope `session` (§9.1), kept apart from intent.parsed's provenance. */
  intent_extensions: {
    capabilities: string[];
    approver: { type: string; id: string };
    ask_step_id: string;
    provenance?: Json;
  }[];
  intent_change_attempts: number;
  closed: boolean;
  step_index: number;
  turn: { id: string | null; index: number; step_count: number; tool_call_count: number; open: boolean };
  counters: {
    steps_total: number;
    steps_by_method: Record<string, number>;
    tool_calls_total: number;
    tool_calls_by_tool: Record<string, number>;
    turns_total: number;
    deferrals: number;
    asks: number;
    denials: number;
    subagents_started: number;
  };
  provenance: {
    summary: {
      origins_seen: string[];
      entry_count: number;
      entry_count_by_origin: Record<string, number>;
      earliest_step_id_by_origin: Record<string, string>;
      max_lineage_depth: number;
    };
    /** Records by provenance id; the newest are in `recent_records` until there are enough to fold in. */
    records: Record<string, ProvenanceRecord>;
    /**
     * The records added since the last fold into `records` (at most RECENT_RECORDS_FOLD): a step that records
     * provenance copies this small map, not every record of the session. Read both through
     * `provenanceRecord()`. Absent in states written before it existed.
     */
    recent_records?: Record<string, ProvenanceRecord>;
    /** Number of records (kept so the cap check is O(1)); absent in states written before it existed. */
    record_count?: number;
  };
  taint: { earliest_untrusted: TaintMark | null; latest_untrusted: TaintMark | null; untrusted_steps: number };
  recent_steps: RecentStep[];
  /** The newest tool calls as `[tool, at_ms]` (the timestamp they carried): what the rate windows count. */
  recent_tool_calls: RecentToolCall[];
  approvals: ApprovalGrant[];
  skills: { registered: Record<string, SkillRegistration>; loaded: string[] };
}

export interface SessionStateOptions {
  /** Per-origin trust overrides (§7.2 allows policy to override defaults; the caller audits them). */
  originTrust?: Partial<Record<string, Trust>>;
  /** How many recent steps / tool-call times to keep (bounded state). */
  recentSteps?: number;
  recentToolCalls?: number;
  /** Upper bound on provenance records kept (default 4096); beyond it the oldest are evicted, and data
   *  derived from an evicted id counts it as `unknown` (fail closed). */
  maxProvenanceRecords?: number;
}

const DEFAULT_RECENT_STEPS = 20;
const DEFAULT_RECENT_TOOL_CALLS = 200;
const DEFAULT_MAX_PROVENANCE = 4096;
/** New records are folded into `provenance.records` in batches of this many (one copy of the big map per batch). */
const RECENT_RECORDS_FOLD = 64;

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

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function parseIntent(intent: Json, stepId: string): IntentState | null {
  if (!isObject(intent)) return null;
  const parsed = stringList(intent.parsed);
  const out: IntentState = { parsed, scope_mode: str(intent.scope_mode) ?? null, established_step_id: stepId };
  if (intent.raw !== undefined) out.raw = intent.raw;
  if (intent.parser_provenance !== undefined) out.parser_provenance = intent.parser_provenance;
  return out;
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

function escapePointer(seg: string): string {
  // Most member names need no escaping: skip the two replaces (collectProvenance runs twice per step).
  if (!seg.includes('~') && !seg.includes('/')) return seg;
  return seg.replace(/~/g, '~0').replace(/\//g, '~1');
}

export interface FoundProvenance {
  provenance_id: string;
  origin: string;
  source_id?: string;
  derived_from: string[];
  /** JSON pointer (RFC 6901) of the data-bearing object inside params.payload. */
  path: string;
}

/**
 * Every Provenance object in a payload: any object member whose key ends in `provenance` and whose value
 * carries string `provenance_id` and `origin` (§7: content, arguments, results, outputs, registration_provenance…).
 */
export function collectProvenance(payload: Json): FoundProvenance[] {
  const found: FoundProvenance[] = [];
  collectProvenanceInto(found, payload, '', 0);
  return found;
}

/** The walk behind collectProvenance; a module function and pointers built only for containers (it runs per step). */
function collectProvenanceInto(found: FoundProvenance[], node: Json, path: string, depth: number): void {
  if (depth > 64) return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child = node[i];
      if (child !== null && typeof child === 'object') collectProvenanceInto(found, child, `${path}/${i}`, depth + 1);
    }
    return;
  }
  if (!isObject(node)) return;
  for (const key of Object.keys(node)) {
    const value = node[key];
    if (
      key.endsWith('provenance') &&
      isObject(value) &&
      typeof value.provenance_id === 'string' &&
      typeof value.origin === 'string'
    ) {
      const rec: FoundProvenance = {
        provenance_id: value.provenance_id,
        origin: value.origin,
        derived_from: stringList(value.derived_from),
        path,
      };
      if (typeof value.source_id === 'string') rec.source_id = value.source_id;
      found.push(rec);
    } else if (value !== null && typeof value === 'object')
      collectProvenanceInto(found, value, `${path}/${escapePointer(key)}`, depth + 1);
  }
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

/**
 * `obj[key]` when `key` is the object's own member. State maps are keyed by client-chosen names (tool names,
 * provenance ids, skill ids): a plain index would read `Object.prototype` for `constructor` or `__proto__`.
 */
export function ownValue<T>(obj: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** A copy of `obj` with `key` set as an own member (setOwn defines it, even `__proto__`). */
function withMember<T>(obj: Readonly<Record<string, T>>, key: string, value: T): Record<string, T> {
  // Copy, then set: a member written after a spread inside the same literal leaves the engine's fast path.
  const out = { ...obj };
  setOwn(out, key, value);
  return out;
}

/** `[...list, item]` keeping only the newest `keep` items (the bounded history arrays). */
function appendBounded<T>(list: readonly T[], item: T, keep: number): T[] {
  if (keep <= 0) return [];
  // One copy of the kept tail (the tool-call history is 200 long: spread then slice copied it twice per call).
  const kept = list.slice(Math.max(0, list.length + 1 - keep));
  kept.push(item);
  return kept;
}

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
function appendToolCall(calls: readonly RecentToolCall[], call: RecentToolCall, keep: number): RecentToolCall[] {
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

function toolOf(method: string, payload: JsonObject): { tool?: string; capability?: string; isToolCall: boolean } {
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

/** Sets `key` as an own member of a fresh map (plain assignment of `__proto__` would set the prototype instead). */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Drops the oldest tenth of the records (by step) once over the cap: new data is what later steps cite. */
function evictOldRecords(records: Record<string, ProvenanceRecord>, maxRecords: number): number {
  const ids = Object.keys(records);
  if (ids.length <= maxRecords) return ids.length;
  const drop = ids.length - maxRecords + Math.ceil(maxRecords / 10);
  const oldest = ids.sort((a, b) => records[a].step_index - records[b].step_index || (a < b ? -1 : 1)).slice(0, drop);
  for (const id of oldest) delete records[id];
  return ids.length - oldest.length;
}

/**
 * Folds one evaluated step (the request params as received) into the state and returns the new state;
 * the input state is not mutated. Call it before building the policy input so counts include this step.
 *
 * Copy on write: the new state shares every member this step does not change with `state` (states are
 * never mutated once returned), so a step costs what it changes, not the size of the session — the
 * provenance records map is copied only by a step that records new provenance.
 */
/** §9.1 scope this_request: a pending grant applies to the next tool call only. */
function isPendingGrant(g: ApprovalGrant): boolean {
  return g.scope === 'this_request' && g.consumed_by === undefined;
}

export function advanceSessionState(
  state: SessionState,
  method: string,
  params: Json,
  options: SessionStateOptions = {},
): SessionState {
  const p = isObject(params) ? params : {};
  const payload = isObject(p.payload) ? p.payload : {};
  const metadata = isObject(p.metadata) ? p.metadata : {};
  const stepId = str(p.request_id) ?? `step-${state.step_index}`;
  const timestamp = str(p.timestamp) ?? '';
  const metaTurnId = str(metadata.turn_id) ?? null;
  // Copies then assignments throughout, never `{ ...x, member }` (see withMember); same members, same order.
  const counters = { ...state.counters };
  counters.steps_by_method = withMember(
    state.counters.steps_by_method,
    method,
    (ownValue(state.counters.steps_by_method, method) ?? 0) + 1,
  );
  const next: SessionState = { ...state };
  next.counters = counters;

  // Turn bookkeeping (turnStart opens; a step naming an unseen turn opens one implicitly).
  if (method === 'steps/turnStart') {
    next.turn = {
      id: str(payload.turn_id) ?? metaTurnId,
      index: state.turn.index + 1,
      step_count: 0,
      tool_call_count: 0,
      open: true,
    };
    counters.turns_total += 1;
  } else if (metaTurnId !== null && metaTurnId !== state.turn.id) {
    next.turn = { id: metaTurnId, index: state.turn.index + 1, step_count: 0, tool_call_count: 0, open: true };
    counters.turns_total += 1;
  } else {
    next.turn = { ...state.turn };
  }
  next.turn.step_count += 1;

  next.step_index += 1;
  counters.steps_total += 1;

  const { tool, capability, isToolCall } = toolOf(method, payload);
  if (isToolCall) {
    next.turn.tool_call_count += 1;
    counters.tool_calls_total += 1;
    const key = tool ?? '';
    counters.tool_calls_by_tool = withMember(
      state.counters.tool_calls_by_tool,
      key,
      (ownValue(state.counters.tool_calls_by_tool, key) ?? 0) + 1,
    );
    next.recent_tool_calls = appendToolCall(
      state.recent_tool_calls,
      [key, timestampMs(timestamp)],
      options.recentToolCalls ?? DEFAULT_RECENT_TOOL_CALLS,
    );
    // §9.1 scope this_request: pending grants apply to this call only, never to later ones.
    if (state.approvals.some(isPendingGrant))
      next.approvals = state.approvals.map((g) => (isPendingGrant(g) ? { ...g, consumed_by: stepId } : g));
  }

  // Intent is fixed at sessionStart or the first agentTrigger (§8.4); later attempts are counted, not applied.
  if ((method === 'steps/sessionStart' || method === 'steps/agentTrigger') && payload.intent !== undefined) {
    if (next.intent === null) next.intent = parseIntent(payload.intent, stepId);
    else next.intent_change_attempts += 1;
  }
  if (method === 'steps/sessionStart' && typeof payload.policy_mode === 'string')
    next.policy_mode = payload.policy_mode;
  if (method === 'steps/subagentStart') counters.subagents_started += 1;
  if (method === 'steps/sessionEnd') next.closed = true;

  if (method === 'steps/skillRegister' && typeof payload.skill_id === 'string') {
    const def = isObject(payload.definition) ? payload.definition : {};
    const comp = isObject(payload.composition) ? payload.composition : {};
    next.skills = {
      ...state.skills,
      registered: withMember<SkillRegistration>(state.skills.registered, payload.skill_id, {
        digest: normaliseDigest(def.digest),
        step_id: stepId,
        declared_capabilities: stringList(payload.declared_capabilities),
        composed_skills: stringList(comp.composed_skills),
        approved: true,
      }),
    };
  }
  if (
    method === 'steps/skillLoad' &&
    typeof payload.skill_id === 'string' &&
    !state.skills.loaded.includes(payload.skill_id)
  ) {
    next.skills = { ...next.skills, loaded: [...state.skills.loaded, payload.skill_id] };
  }
  if (method === 'steps/skillUnload' && typeof payload.skill_id === 'string') {
    const skillId = payload.skill_id;
    next.skills = { ...next.skills, loaded: state.skills.loaded.filter((s) => s !== skillId) };
  }

  // Provenance: record each object once (first sighting wins), derive trust (§7.2), update the summary.
  const found = collectProvenance(payload);
  const maxRecords = options.maxProvenanceRecords ?? DEFAULT_MAX_PROVENANCE;
  let stepUntrusted: TaintMark | null = null;
  const base = state.provenance.records;
  const recentBase = state.provenance.recent_records ?? {};
  const added = new Map<string, ProvenanceRecord>();
  const known: KnownRecords = { added, recent: recentBase, base };
  for (const f of found) {
    const existing = knownRecord(known, f.provenance_id);
    const rec = existing ?? recordFor(known, f, stepId, next.step_index, next.turn.index, options);
    if (!existing) added.set(f.provenance_id, rec);
    if (rec.trust !== 'trusted' && stepUntrusted === null) {
      stepUntrusted = {
        step_id: stepId,
        step_index: next.step_index,
        turn_index: next.turn.index,
        turn_id: next.turn.id,
        provenance_id: f.provenance_id,
        origin: f.origin,
      };
    }
  }
  const recordCount =
    added.size > 0 ? (state.provenance.record_count ?? 0) + added.size : state.provenance.record_count;
  const overCap = (recordCount ?? Object.keys(base).length + Object.keys(recentBase).length) > maxRecords;
  if (added.size > 0 || overCap) {
    let recent: Record<string, ProvenanceRecord> = { ...recentBase };
    const summary = { ...state.provenance.summary };
    summary.origins_seen = [...state.provenance.summary.origins_seen];
    summary.entry_count_by_origin = { ...state.provenance.summary.entry_count_by_origin };
    summary.earliest_step_id_by_origin = { ...state.provenance.summary.earliest_step_id_by_origin };
    for (const [id, rec] of added) {
      setOwn(recent, id, rec);
      summary.entry_count += 1;
      setOwn(summary.entry_count_by_origin, rec.origin, (ownValue(summary.entry_count_by_origin, rec.origin) ?? 0) + 1);
      if (!summary.origins_seen.includes(rec.origin)) summary.origins_seen.push(rec.origin);
      if (ownValue(summary.earliest_step_id_by_origin, rec.origin) === undefined)
        setOwn(summary.earliest_step_id_by_origin, rec.origin, stepId);
      summary.max_lineage_depth = Math.max(summary.max_lineage_depth, rec.lineage_depth);
    }
    let records = base;
    // Added ids are in neither layer (the lookup above checked both), so the layer grows by exactly added.size.
    let recentSize = recentLayerSize(recentBase) + added.size;
    if (overCap || recentSize >= RECENT_RECORDS_FOLD) {
      records = { ...base, ...recent };
      recent = {};
      recentSize = 0;
    }
    lastRecentLayer = { records: recent, size: recentSize };
    const provenance: SessionState['provenance'] = { ...state.provenance };
    provenance.summary = summary;
    provenance.records = records;
    provenance.recent_records = recent;
    if (recordCount !== undefined) provenance.record_count = recordCount;
    if (overCap) provenance.record_count = evictOldRecords(records, maxRecords);
    next.provenance = provenance;
  }
  if (stepUntrusted) {
    const taint = { ...state.taint };
    taint.earliest_untrusted = state.taint.earliest_untrusted === null ? stepUntrusted : state.taint.earliest_untrusted;
    taint.latest_untrusted = stepUntrusted;
    taint.untrusted_steps = state.taint.untrusted_steps + 1;
    next.taint = taint;
  }

  const provenanceIds = distinctProvenanceIds(found);
  const recent = recentStep(
    stepId,
    next.step_index,
    method,
    next.turn.index,
    next.turn.id,
    timestamp,
    provenanceIds,
    stepUntrusted !== null,
    tool,
    capability,
  );
  next.recent_steps = appendBounded(state.recent_steps, recent, options.recentSteps ?? DEFAULT_RECENT_STEPS);
  lastRecentStep = recent;
  lastFold = { state: next, payload, ids: provenanceIds };

  if (method === 'steps/turnEnd') next.turn.open = false;
  return next;
}

/**
 * The recent-records layer the last fold wrote and its number of records: the session's next step starts from it,
 * so its keys (up to RECENT_RECORDS_FOLD) need not be counted again on every step. One entry; other layers are
 * counted.
 */
let lastRecentLayer: { records: Readonly<Record<string, ProvenanceRecord>>; size: number } | undefined;

function recentLayerSize(records: Readonly<Record<string, ProvenanceRecord>>): number {
  return lastRecentLayer !== undefined && lastRecentLayer.records === records
    ? lastRecentLayer.size
    : Object.keys(records).length;
}

/** Provenance ids in first-seen order, each once. */
function distinctProvenanceIds(found: readonly FoundProvenance[]): string[] {
  // A step references a few objects: a linear scan beats building a Set, which bounds the scan's cost.
  if (found.length > 16) return [...new Set(found.map((f) => f.provenance_id))];
  const ids: string[] = [];
  for (const f of found) if (!ids.includes(f.provenance_id)) ids.push(f.provenance_id);
  return ids;
}

/**
 * The provenance ids the last advanceSessionState found in its step's payload, with the state it returned: the
 * policy input, built from that state right after, projects the same ids without walking the payload again.
 * One entry, not a WeakMap per state (weak tables made every young-generation collection slower). States are
 * never mutated once returned, so the entry is true as long as it is the same state and payload.
 */
let lastFold: { state: SessionState; payload: Json; ids: readonly string[] } | undefined;

/** The distinct provenance ids of `payload`, taken from the fold that produced `state` when it folded this payload. */
export function referencedProvenanceIds(state: SessionState, payload: Json): readonly string[] {
  return lastFold !== undefined && lastFold.state === state && lastFold.payload === payload
    ? lastFold.ids
    : distinctProvenanceIds(collectProvenance(payload));
}

/**
 * The RecentStep the last advanceSessionState appended: its own members are exactly those recentStep writes, in
 * that order, so recordDecision (which follows it) can copy it member by member: a spread of these objects (of
 * several shapes, tool and capability optional) takes the engine's generic clone path.
 */
let lastRecentStep: RecentStep | undefined;

function recentStep(
  step_id: string,
  index: number,
  method: string,
  turn_index: number,
  turn_id: string | null,
  timestamp: string,
  provenance_ids: string[],
  untrusted: boolean,
  tool: string | undefined,
  capability: string | undefined,
  decision?: string,
): RecentStep {
  const recent: RecentStep = { step_id, index, method, turn_index, turn_id, timestamp, provenance_ids, untrusted };
  if (tool !== undefined) recent.tool = tool;
  if (capability !== undefined) recent.capability = capability;
  if (decision !== undefined) recent.decision = decision;
  return recent;
}

/** `{ ...step, decision }`. */
function withDecision(step: RecentStep, decision: string): RecentStep {
  if (step !== lastRecentStep) return { ...step, decision };
  return recentStep(
    step.step_id,
    step.index,
    step.method,
    step.turn_index,
    step.turn_id,
    step.timestamp,
    step.provenance_ids,
    step.untrusted,
    step.tool,
    step.capability,
    decision,
  );
}

/** The records a step's fold can see: those it adds, then the state's recent and folded ones. */
interface KnownRecords {
  added: Map<string, ProvenanceRecord>;
  recent: Readonly<Record<string, ProvenanceRecord>>;
  base: Readonly<Record<string, ProvenanceRecord>>;
}

/** A module function, not a closure per step (tsx names every closure it creates with a defineProperty). */
function knownRecord(known: KnownRecords, id: string): ProvenanceRecord | undefined {
  return known.added.get(id) ?? ownValue(known.recent, id) ?? ownValue(known.base, id);
}

function recordFor(
  known: KnownRecords,
  f: FoundProvenance,
  stepId: string,
  stepIndex: number,
  turnIndex: number,
  options: SessionStateOptions,
): ProvenanceRecord {
  const override = options.originTrust ? ownValue(options.originTrust, f.origin) : undefined;
  // §7.2: agent_generated has the minimum trust of its lineage (no lineage → `unknown`); every other origin
  // starts at its default (or the policy override) and still never rises above a lower-trust parent.
  let trust: Trust =
    f.origin === 'agent_generated'
      ? f.derived_from.length === 0
        ? 'unknown'
        : 'trusted'
      : (override ?? ownValue(DEFAULT_ORIGIN_TRUST as Record<string, Trust>, f.origin) ?? 'unknown');
  if (f.origin === 'agent_generated' && override !== undefined) trust = minTrust(trust, override);
  let depth = 0;
  for (const parent of f.derived_from) {
    const pr = knownRecord(known, parent);
    // A parent we never saw cannot vouch for anything.
    trust = minTrust(trust, pr ? pr.trust : 'unknown');
    depth = Math.max(depth, (pr?.lineage_depth ?? 0) + 1);
  }
  const rec: ProvenanceRecord = {
    origin: f.origin,
    derived_from: f.derived_from,
    trust,
    step_id: stepId,
    step_index: stepIndex,
    turn_index: turnIndex,
    path: f.path,
    lineage_depth: depth,
  };
  if (f.source_id !== undefined) rec.source_id = f.source_id;
  return rec;
}

/** The record of a provenance id this session has seen (and not evicted). */
export function provenanceRecord(state: SessionState, id: string): ProvenanceRecord | undefined {
  const recent = state.provenance.recent_records;
  return (recent ? ownValue(recent, id) : undefined) ?? ownValue(state.provenance.records, id);
}

/** Every record the session holds, by provenance id (both layers; for inspection, not the per-step path). */
export function provenanceRecords(state: SessionState): Record<string, ProvenanceRecord> {
  return { ...state.provenance.records, ...state.provenance.recent_records };
}

/** Transitive ancestors of a provenance id (cycle-safe, sorted). */
export function lineageOf(state: SessionState, provenanceId: string, limit = Infinity): string[] {
  // Breadth-first, so a bounded lineage keeps the nearest ancestors.
  const seen = new Set<string>();
  const queue = [...(provenanceRecord(state, provenanceId)?.derived_from ?? [])];
  for (let i = 0; i < queue.length && seen.size < limit; i++) {
    const id = queue[i];
    if (seen.has(id)) continue;
    seen.add(id);
    queue.push(...(provenanceRecord(state, id)?.derived_from ?? []));
  }
  return [...seen].sort();
}

/**
 * Folds the decision delivered for a step into the state: deferral/ask/deny counters (the §6 deferral bound),
 * the step's decision in recent_steps, and a denied skillRegister is no longer an approved registration.
 * Copy on write, like advanceSessionState.
 */
export function recordDecision(
  state: SessionState,
  step: { step_id: string; method: string; params?: Json },
  decision: string,
): SessionState {
  const next: SessionState = { ...state };
  if (decision === 'defer' || decision === 'ask' || decision === 'deny') {
    const counters = { ...state.counters };
    if (decision === 'defer') counters.deferrals = state.counters.deferrals + 1;
    else if (decision === 'ask') counters.asks = state.counters.asks + 1;
    else counters.denials = state.counters.denials + 1;
    next.counters = counters;
  }
  // The first match, as findIndex would give, without a closure per step.
  let at = -1;
  for (let i = 0; i < state.recent_steps.length; i++) {
    if (state.recent_steps[i].step_id === step.step_id) {
      at = i;
      break;
    }
  }
  if (at >= 0) {
    next.recent_steps = [...state.recent_steps];
    next.recent_steps[at] = withDecision(state.recent_steps[at], decision);
  }
  if (step.method === 'steps/skillRegister' && decision !== 'allow') {
    let registered: Record<string, SkillRegistration> | undefined;
    for (const [id, reg] of Object.entries(state.skills.registered)) {
      if (reg.step_id !== step.step_id) continue;
      registered ??= { ...state.skills.registered };
      setOwn(registered, id, { ...reg, approved: false });
    }
    if (registered) next.skills = { ...state.skills, registered };
  }
  if (step.method === 'steps/skillLoad' && decision !== 'allow') {
    const payload = isObject(step.params) && isObject(step.params.payload) ? step.params.payload : {};
    const skillId = payload.skill_id;
    if (typeof skillId === 'string')
      next.skills = { ...next.skills, loaded: next.skills.loaded.filter((s) => s !== skillId) };
  }
  return next;
}

/**
 * Records an approver's grant (§9). Scope `session` appends to the intent extensions (kept apart from
 * parser_provenance, §9.1); `this_request` grants stay in `approvals` for policies to match.
 */
export function recordApproval(state: SessionState, grant: ApprovalGrant): SessionState {
  const next: SessionState = { ...state, approvals: [...state.approvals, clone(grant)] };
  if (grant.scope === 'session' && grant.capabilities.length > 0) {
    const ext: SessionState['intent_extensions'][number] = {
      capabilities: [...grant.capabilities],
      approver: grant.approver,
      ask_step_id: grant.ask_step_id,
    };
    if (grant.provenance !== undefined) ext.provenance = grant.provenance;
    next.intent_extensions = [...state.intent_extensions, ext];
  }
  return next;
}

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
