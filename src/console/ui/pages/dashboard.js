// Dashboard: decisions per minute by disposition (uPlot), top reason codes, latency, active bundle, store health.
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api } from '../api.js';
import { ErrorNote, useLoad } from '../view.js';

const DISPOSITIONS = ['allow', 'deny', 'modify', 'ask', 'defer'];
const COLOURS = { allow: '#2e8b57', deny: '#c0392b', modify: '#d68910', ask: '#2f6fde', defer: '#7d3c98' };

/** Columns for uPlot: one x value per minute of the window, one series per disposition. */
function series(stats) {
  const start = Math.floor(Date.parse(stats.since) / 60_000) * 60;
  const end = Math.floor(Date.now() / 60_000) * 60;
  const xs = [];
  for (let t = start; t <= end; t += 60) xs.push(t);
  const index = new Map(xs.map((t, i) => [t, i]));
  const ys = DISPOSITIONS.map(() => xs.map(() => 0));
  for (const r of stats.per_minute) {
    const i = index.get(Date.parse(r.minute) / 1000);
    const d = DISPOSITIONS.indexOf(r.disposition);
    if (i !== undefined && d >= 0) ys[d][i] = r.count;
  }
  return [xs, ...ys];
}

function Chart({ stats }) {
  const box = useRef(null);
  useEffect(() => {
    const plot = new uPlot(
      {
        width: Math.min(box.current.clientWidth || 900, 1200),
        height: 260,
        title: 'Decisions per minute',
        series: [{}, ...DISPOSITIONS.map((d) => ({ label: d, stroke: COLOURS[d], width: 2 }))],
        axes: [{}, { label: 'decisions' }],
      },
      series(stats),
      box.current,
    );
    return () => plot.destroy();
  }, [stats]);
  return html`<figure class="chart" ref=${box} aria-label="Decisions per minute by disposition"></figure>`;
}

const ms = (v) => (v === null ? '—' : `${v.toFixed(2)} ms`);

export function DashboardPage() {
  const [stats, error] = useLoad(() => api('/stats?minutes=60'), []);
  if (!stats) return html`<h1>Dashboard</h1><${ErrorNote} error=${error} />`;
  return html`<h1>Dashboard</h1>
    <dl class="facts" id="dashboard-facts">
      <dt>Decisions (last hour)</dt><dd>${stats.decisions}</dd>
      <dt>Evaluation p50 / p99</dt><dd>${ms(stats.latency_ms.p50)} / ${ms(stats.latency_ms.p99)}</dd>
      <dt>Active bundle</dt><dd>${stats.active_revision ?? '—'}</dd>
      <dt>Store</dt><dd>${stats.store.driver}: ${stats.store.ok ? 'ok' : 'NOT ANSWERING'}</dd>
    </dl>
    <${Chart} stats=${stats} />
    <h2>Top reason codes</h2>
    <table>
      <thead><tr><th>Reason code</th><th>Decisions</th></tr></thead>
      <tbody>
        ${stats.top_reason_codes.map((r) => html`<tr><td><code>${r.code}</code></td><td>${r.count}</td></tr>`)}
      </tbody>
    </table>`;
}
