// Sessions: the filtered list, and one session's chain as a timeline with its decisions and a verify button.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, query, stream } from '../api.js';
import { Badge, Codes, DispositionSelect, ErrorNote, PolicyRefs, time, useLoad } from '../view.js';

export function SessionsPage() {
  const [filter, setFilter] = useState({});
  const [cursors, setCursors] = useState([]);
  const cursor = cursors.at(-1);
  const [page, error] = useLoad(() => api(`/sessions${query({ ...filter, cursor, limit: 25 })}`), [filter, cursor]);
  const submit = (e) => {
    e.preventDefault();
    setCursors([]);
    setFilter(Object.fromEntries(new FormData(e.currentTarget)));
  };
  return html`<h1>Sessions</h1>
    <form class="filters" onSubmit=${submit} aria-label="Filter sessions">
      <label>Agent <input name="agent" /></label>
      <${DispositionSelect} />
      <label>Reason code <input name="reason_code" /></label>
      <label>Policy revision <input name="revision" /></label>
      <button type="submit">Filter</button>
    </form>
    <${ErrorNote} error=${error} />
    <table>
      <thead>
        <tr><th>Session</th><th>Agent</th><th>Started</th><th>Entries</th><th>Closed</th></tr>
      </thead>
      <tbody>
        ${(page?.sessions ?? []).map(
          (s) => html`<tr>
            <td><a href=${`#/sessions/${encodeURIComponent(s.id)}`}><code>${s.id}</code></a></td>
            <td>${s.agent_id}</td>
            <td>${time(s.created_at)}</td>
            <td>${s.entries}</td>
            <td>${time(s.closed_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${page && page.sessions.length === 0 && html`<p>No sessions match.</p>`}
    <div class="pager">
      ${cursors.length > 0 && html`<button type="button" onClick=${() => setCursors(cursors.slice(0, -1))}>Previous</button>`}
      ${page?.next_cursor && html`<button type="button" onClick=${() => setCursors([...cursors, page.next_cursor])}>Next</button>`}
    </div>`;
}

function Verify({ id }) {
  const [state, setState] = useState(null);
  const run = async () => {
    setState({ running: true, entries: 0 });
    try {
      await stream(`/sessions/${encodeURIComponent(id)}/verify`, ({ event, data }) => {
        if (event === 'progress') setState({ running: true, entries: data.entries });
        if (event === 'result') setState({ report: data });
      });
    } catch (error) {
      setState({ error });
    }
  };
  const r = state?.report;
  return html`<section aria-label="Chain verification" class="verify">
    <button type="button" onClick=${run} disabled=${state?.running}>Verify chain</button>
    <output aria-live="polite" id="verify-result">
      ${state?.running && `Checking… ${state.entries} entries`}
      ${r?.ok &&
      html`<span class="ok">Chain intact: ${r.entries} entries, ${r.checkpointsVerified}/${r.checkpoints} checkpoints verified</span>`}
      ${r &&
      !r.ok &&
      html`<span class="broken">Chain BROKEN at seq ${r.firstBreak?.seq ?? '—'}: ${r.firstBreak?.kind} — ${r.firstBreak?.message}</span>`}
      ${state?.error && html`<span class="broken">${state.error.message}</span>`}
    </output>
  </section>`;
}

export function SessionPage({ id }) {
  const [detail, error] = useLoad(() => api(`/sessions/${encodeURIComponent(id)}`), [id]);
  const [entries, entriesError] = useLoad(() => api(`/sessions/${encodeURIComponent(id)}/entries?limit=500`), [id]);
  const s = detail?.session;
  return html`<p><a href="#/sessions">← Sessions</a></p>
    <h1>Session <code>${id}</code></h1>
    <${ErrorNote} error=${error ?? entriesError} />
    ${s &&
    html`<dl class="facts">
      <dt>Agent</dt><dd>${s.agent_id}</dd>
      <dt>Started</dt><dd>${time(s.created_at)}</dd>
      <dt>Closed</dt><dd>${time(s.closed_at)}</dd>
      <dt>Entries</dt><dd>${s.entries}</dd>
      <dt>Head</dt><dd><code>${s.head_hash ?? '—'}</code></dd>
      <dt>Checkpoints</dt><dd>${detail.checkpoints}</dd>
    </dl>`}
    <${Verify} id=${id} />
    <h2>Chain</h2>
    <ol class="timeline">
      ${(entries?.entries ?? []).map(
        (e) => html`<li class="step">
          <div class="step-head">
            <span class="seq">#${e.seq}</span>
            <code>${e.method}</code>
            <${Badge} decision=${e.decision?.decision} />
            <span class="muted">${time(e.created_at)} · revision ${e.bundle_revision ?? '—'}</span>
          </div>
          ${e.decision?.reasoning && html`<p class="reasoning">${e.decision.reasoning}</p>`}
          <${Codes} codes=${e.decision?.reason_codes} />
          <${PolicyRefs} refs=${e.decision?.policy_references} />
          ${e.method.startsWith('agbom/') &&
          html`<details open><summary>AgBOM</summary><pre>${JSON.stringify(e.params?.payload, null, 2)}</pre></details>`}
          <details>
            <summary>Request and hashes</summary>
            <p class="muted">entry <code>${e.entry_hash}</code> · previous <code>${e.previous_hash ?? '—'}</code></p>
            <pre>${JSON.stringify(e.params, null, 2)}</pre>
          </details>
        </li>`,
      )}
    </ol>`;
}
