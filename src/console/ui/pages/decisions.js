// Decision search across sessions.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { Badge, Codes, DispositionSelect, ErrorNote, time, useLoad } from '../view.js';

export const DecisionRows = ({ decisions }) => html`<table>
  <thead>
    <tr><th>When</th><th>Agent</th><th>Session</th><th>Method</th><th>Decision</th><th>Reason codes</th><th>Revision</th></tr>
  </thead>
  <tbody>
    ${decisions.map(
      (d) => html`<tr class="decision-row">
        <td>${time(d.created_at)}</td>
        <td>${d.agent_id}</td>
        <td><a href=${`#/sessions/${encodeURIComponent(d.session_id)}`}><code>${d.session_id.slice(0, 8)}</code></a> #${d.seq}</td>
        <td><code>${d.method}</code></td>
        <td><${Badge} decision=${d.decision?.decision} /></td>
        <td><${Codes} codes=${d.decision?.reason_codes} /></td>
        <td>${d.bundle_revision ?? '—'}</td>
      </tr>`,
    )}
  </tbody>
</table>`;

export function DecisionsPage() {
  const [filter, setFilter] = useState({});
  const [page, error] = useLoad(() => api(`/decisions${query({ ...filter, limit: 100 })}`), [filter]);
  const submit = (e) => {
    e.preventDefault();
    setFilter(Object.fromEntries(new FormData(e.currentTarget)));
  };
  return html`<h1>Decisions</h1>
    <form class="filters" onSubmit=${submit} aria-label="Search decisions">
      <${DispositionSelect} />
      <label>Reason code <input name="reason_code" /></label>
      <label>Agent <input name="agent" /></label>
      <label>Method <input name="method" /></label>
      <label>Policy revision <input name="revision" /></label>
      <button type="submit">Search</button>
    </form>
    <${ErrorNote} error=${error} />
    ${page && html`<${DecisionRows} decisions=${page.decisions} />`}`;
}
