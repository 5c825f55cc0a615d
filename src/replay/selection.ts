// Selection from loose text input (CLI flags, admin API JSON): one parser, precise errors.
import { DISPOSITIONS } from '../acs/methods.ts';
import type { ReplaySelection } from './types.ts';
import { ReplayError } from './errors.ts';

export interface SelectionInput {
  session?: unknown;
  agent?: unknown;
  since?: unknown;
  until?: unknown;
  method?: unknown;
  decision?: unknown;
  decidedBy?: unknown;
}

function stringsOf(name: string, v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const xs = Array.isArray(v) ? v : [v];
  const out: string[] = [];
  for (const x of xs) {
    if (typeof x !== 'string' || x.length === 0 || x.length > 512)
      throw new ReplayError(
        'invalid_selection',
        `${name} must be a non-empty string (or a list of them) of at most 512 characters`,
      );
    // Comma-separated lists are accepted from flags (`--method a,b`).
    out.push(
      ...x
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    );
  }
  if (out.length === 0) throw new ReplayError('invalid_selection', `${name} is empty`);
  return [...new Set(out)];
}

function dateOf(name: string, v: unknown): Date | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ReplayError('invalid_selection', `${name} must be an ISO 8601 date string`);
  // A bare date or a full RFC 3339 timestamp; anything Date.parse would guess at is refused.
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) {
    throw new ReplayError(
      'invalid_selection',
      `${name}: ${JSON.stringify(v)} is not an ISO 8601 date (e.g. 2026-01-31 or 2026-01-31T12:00:00Z)`,
    );
  }
  const d = new Date(v);
  if (Number.isNaN(d.getTime()))
    throw new ReplayError('invalid_selection', `${name}: ${JSON.stringify(v)} is not a valid date`);
  return d;
}

function oneString(name: string, v: unknown): string | undefined {
  const xs = stringsOf(name, v);
  if (xs && xs.length !== 1) throw new ReplayError('invalid_selection', `${name} takes one value`);
  return xs?.[0];
}

export function parseSelection(input: SelectionInput): ReplaySelection {
  const sel: ReplaySelection = {};
  const sessions = stringsOf('session', input.session);
  if (sessions) sel.sessionIds = sessions;
  const agent = oneString('agent', input.agent);
  if (agent !== undefined) sel.agentId = agent;
  const since = dateOf('since', input.since);
  if (since) sel.since = since;
  const until = dateOf('until', input.until);
  if (until) sel.until = until;
  if (since && until && since > until) throw new ReplayError('invalid_selection', 'since is after until');
  const methods = stringsOf('method', input.method);
  if (methods) sel.methods = methods;
  const decisions = stringsOf('decision', input.decision);
  if (decisions) {
    const bad = decisions.filter((d) => !(DISPOSITIONS as readonly string[]).includes(d));
    if (bad.length)
      throw new ReplayError(
        'invalid_selection',
        `decision must be one of ${DISPOSITIONS.join(', ')} (got ${bad.join(', ')})`,
      );
    sel.decisions = decisions;
  }
  const decidedBy = oneString('decided-by', input.decidedBy);
  if (decidedBy !== undefined) sel.decidedBy = decidedBy;
  return sel;
}
