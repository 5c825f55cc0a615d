// Report rendering, escaping, comparison and progress formatting on real values (no store needed).
import { describe, expect, it } from 'vitest';
import {
  compareDecisions,
  decisionView,
  escapeHtml,
  escapeMarkdownCell,
  formatProgress,
  parseSelection,
  progressBar,
  renderReport,
  type ReplayReport,
} from '../../src/replay/index.ts';

const HOSTILE = '<img src=x onerror=alert(1)>|**x**\u001b[31m';

function reportWith(rule: string): ReplayReport {
  const recorded = decisionView({
    decision: 'allow',
    reason_codes: [],
    policy_references: [{ policy_id: 'p', rule_id: 'r.allow', policy_version: 'v1' }],
  })!;
  const replayed = decisionView({
    decision: 'deny',
    reasoning: 'no',
    reason_codes: [rule],
    policy_references: [{ policy_id: 'p', rule_id: rule, policy_version: 'v2' }],
  })!;
  const delta = compareDecisions(recorded, replayed);
  return {
    summary: {
      against: HOSTILE,
      determinismCheck: false,
      revisions: ['v2'],
      selection: { agent: HOSTILE },
      startedAt: '',
      finishedAt: '',
      durationMs: 1,
      entriesPerSecond: 1,
      workers: 0,
      evaluationMs: 0,
      sessions: 1,
      sessionsSkipped: 0,
      entriesScanned: 1,
      entriesEvaluated: 1,
      selected: 1,
      compared: 1,
      unchanged: 0,
      changed: 1,
      tampered: 0,
      unrecorded: 0,
      policyUnavailable: 0,
      unroutable: 0,
      nondeterministic: 0,
      transitions: { 'allow→deny': 1 },
      reasonCodes: { [rule]: { added: 1, removed: 0 } },
      rules: { [rule]: { added: 1, removed: 0 }, 'r.allow': { added: 0, removed: 1 } },
    },
    steps: [
      {
        sessionId: 's',
        seq: 0,
        stepId: 'x',
        method: 'steps/toolCallRequest',
        timestamp: null,
        status: 'compared',
        recorded,
        recordedRevision: 'v1',
        replayed,
        replayedRevision: 'v2',
        delta,
        nondeterministic: false,
      },
    ],
    stepsOmitted: 0,
  };
}

describe('replay reports', () => {
  it('HTML escapes every stored or policy-supplied string and loads nothing', () => {
    const html = renderReport(reportWith(HOSTILE), 'html');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toMatch(/<script|src=["']?http/);
    expect(html).toContain("default-src 'none'");
    expect(escapeHtml(`"'&<>`)).toBe('&quot;&#39;&amp;&lt;&gt;');
  });

  it('Markdown cells cannot break the table or inject HTML; the terminal table strips control characters', () => {
    const md = renderReport(reportWith(HOSTILE), 'md');
    expect(md).not.toContain('<img');
    for (const line of md.split('\n').filter((l) => l.startsWith('|'))) {
      // Every row has as many unescaped pipes as its header.
      expect(line.replace(/\\\|/g, '').split('|').length).toBeGreaterThan(2);
    }
    expect(escapeMarkdownCell('a|b')).toBe('a\\|b');
    const table = renderReport(reportWith(HOSTILE), 'table');
    expect(table).not.toContain('\u001b');
    expect(table).toMatch(/allow→deny\s+1/);
  });

  it('comparison names rules and reason codes added and removed, ignoring policy_version', () => {
    const a = decisionView({
      decision: 'deny',
      reasoning: 'x',
      reason_codes: ['c1', 'c2'],
      policy_references: [{ rule_id: 'r1', policy_version: 'v1' }, { rule_id: 'r2' }],
    })!;
    const b = decisionView({
      decision: 'deny',
      reasoning: 'x',
      reason_codes: ['c2', 'c3'],
      policy_references: [{ rule_id: 'r2', policy_version: 'v9' }, { rule_id: 'r3' }],
    })!;
    expect(compareDecisions(a, b)).toEqual({
      transition: null,
      reasonCodesAdded: ['c3'],
      reasonCodesRemoved: ['c1'],
      rulesAdded: ['r3'],
      rulesRemoved: ['r1'],
      detailsChanged: false,
      changed: true,
    });
    const same = decisionView({
      decision: 'deny',
      reasoning: 'x',
      reason_codes: ['c2', 'c1'],
      policy_references: [{ rule_id: 'r2', policy_version: 'v2' }, { rule_id: 'r1' }],
    })!;
    expect(compareDecisions(a, same).changed).toBe(false);
    expect(decisionView(null)).toBeNull();
    expect(decisionView({ decision: 5 })).toBeNull();
  });

  it('progress: bar, rate and ETA; silent for short runs; one line per period when not a TTY', () => {
    expect(
      formatProgress(
        { processed: 50, total: 200, elapsedMs: 1000, ratePerSecond: 50, etaMs: 3000, sessions: 1, changed: 2 },
        10,
      ),
    ).toBe('[###.......]  25% 50/200 entries  50/s  ETA 3s  2 changed');
    let t = 0;
    const out: string[] = [];
    const bar = progressBar({ write: (s: string) => out.push(s), isTTY: false }, { now: () => t, plainEveryMs: 1000 });
    const p = { processed: 1, total: 10, elapsedMs: 0, ratePerSecond: 1, etaMs: 9000, sessions: 1, changed: 0 };
    bar.onProgress(p);
    expect(out).toHaveLength(0);
    t = 1500;
    bar.onProgress(p);
    t = 1600;
    bar.onProgress(p);
    t = 2600;
    bar.onProgress(p);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/^replay: \[.*\] +10% 1\/10 entries/);
  });

  it('selection parsing: lists, dates, dispositions, precise refusals', () => {
    expect(
      parseSelection({
        method: ['steps/a,steps/b', 'steps/a'],
        decision: 'deny',
        since: '2026-01-31',
        until: '2026-02-01T00:00:00Z',
      }),
    ).toEqual({
      methods: ['steps/a', 'steps/b'],
      decisions: ['deny'],
      since: new Date('2026-01-31'),
      until: new Date('2026-02-01T00:00:00Z'),
    });
    expect(() => parseSelection({ since: 'yesterday' })).toThrow(/ISO 8601/);
    expect(() => parseSelection({ since: '2026-02-02', until: '2026-02-01' })).toThrow(/since is after until/);
    expect(() => parseSelection({ decision: 'maybe' })).toThrow(/decision must be one of/);
    expect(() => parseSelection({ agent: ['a', 'b'] })).toThrow(/takes one value/);
    expect(() => parseSelection({ session: 42 })).toThrow(/non-empty string/);
  });
});
