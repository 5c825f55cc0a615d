// The ACS v0.1.0 method table (§5, hooks.md "Decision:" lines) and the router that classifies a method name.
import { AcsError, AcsErrorCode } from './errors.ts';

export const DISPOSITIONS = ['allow', 'deny', 'modify', 'ask', 'defer'] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

export interface StepMethodSpec {
  method: string;
  /** Payload schema path under src/acs/schemas/. */
  payloadSchema: string;
  /** Dispositions the hook permits (hooks.md); others are substituted (ACS §6.5, §9.2). */
  permitted: readonly Disposition[];
}

const ALL: readonly Disposition[] = DISPOSITIONS;
const AD: readonly Disposition[] = ['allow', 'deny'];
const ADM: readonly Disposition[] = ['allow', 'deny', 'modify'];
const A: readonly Disposition[] = ['allow'];

/** The 19 `steps/*` hooks plus the two `agbom/*` methods. All are content-bearing (§8.6). */
export const STEP_METHODS: ReadonlyMap<string, StepMethodSpec> = new Map(
  (
    [
      ['steps/sessionStart', 'hooks/session-start.json', AD],
      ['steps/agentTrigger', 'hooks/agent-trigger.json', ADM],
      ['steps/turnStart', 'hooks/turn-start.json', AD],
      ['steps/userMessage', 'hooks/user-message.json', ADM],
      ['steps/agentResponse', 'hooks/agent-response.json', ADM],
      ['steps/knowledgeRetrieval', 'hooks/knowledge-retrieval.json', ADM],
      ['steps/memoryContextRetrieval', 'hooks/memory-context-retrieval.json', ADM],
      ['steps/memoryStore', 'hooks/memory-store.json', ADM],
      ['steps/toolCallRequest', 'hooks/tool-call-request.json', ALL],
      ['steps/toolCallResult', 'hooks/tool-call-result.json', ADM],
      ['steps/preCompact', 'hooks/pre-compact.json', AD],
      // postCompact can never be denied: the compaction already happened (hooks.md).
      ['steps/postCompact', 'hooks/post-compact.json', ['allow', 'modify']],
      ['steps/subagentStart', 'hooks/subagent-start.json', AD],
      ['steps/subagentStop', 'hooks/subagent-stop.json', A],
      ['steps/skillRegister', 'hooks/skill-register.json', AD],
      ['steps/skillLoad', 'hooks/skill-load.json', AD],
      ['steps/skillUnload', 'hooks/skill-unload.json', A],
      ['steps/turnEnd', 'hooks/turn-end.json', A],
      ['steps/sessionEnd', 'hooks/session-end.json', A],
      ['agbom/snapshot', 'hooks/agbom-snapshot.json', AD],
      ['agbom/changed', 'hooks/agbom-changed.json', AD],
    ] as const
  ).map(([method, payloadSchema, permitted]) => [method, { method, payloadSchema, permitted }]),
);

/** Wrapped MCP permits all five dispositions (extend_mcp.md). */
export const MCP_PERMITTED: readonly Disposition[] = ALL;

export type RoutedMethod =
  | { kind: 'handshake' }
  | { kind: 'ping' }
  | { kind: 'step'; spec: StepMethodSpec }
  /** `protocols/MCP/<m>` (version = null) or `wrapped:mcp-<version>/<m>`. */
  | { kind: 'mcp'; mcpMethod: string; version: string | null };

/**
 * Classifies a method (dispatch step 5): a method ACS does not define → -32601; one ACS defines but v0.1 can
 * never negotiate (trace/*, A2A wrapping, reserved) → -32003.
 */
export function routeMethod(method: string): RoutedMethod {
  if (method === 'handshake/hello') return { kind: 'handshake' };
  if (method === 'system/ping') return { kind: 'ping' };
  const spec = STEP_METHODS.get(method);
  if (spec) return { kind: 'step', spec };
  if (method.startsWith('protocols/MCP/') && method.length > 'protocols/MCP/'.length) {
    return { kind: 'mcp', mcpMethod: method.slice('protocols/MCP/'.length), version: null };
  }
  const wrapped = /^wrapped:mcp-([^/]+)\/(.+)$/i.exec(method);
  if (wrapped) return { kind: 'mcp', mcpMethod: wrapped[2], version: wrapped[1] };
  if (method.startsWith('trace/') || method.startsWith('protocols/A2A/') || /^wrapped:a2a-[^/]+\/.+$/i.test(method)) {
    // Reserved namespaces: defined by ACS, not negotiable in v0.1 (§3, extend_mcp.md).
    throw new AcsError(
      AcsErrorCode.CapabilityNotNegotiated,
      'not_negotiable_in_v0_1',
      `${method} is reserved and cannot be negotiated in ACS v0.1.0`,
      { method },
    );
  }
  throw new AcsError(AcsErrorCode.MethodNotFound, 'method_not_found', `ACS v0.1.0 does not define ${method}`, {
    method,
  });
}

/** Every method this Guardian evaluates (what `methods_evaluated` may list; ACS §4). */
export function isEvaluableMethod(method: string): boolean {
  try {
    const routed = routeMethod(method);
    return routed.kind !== 'handshake';
  } catch {
    return false;
  }
}
