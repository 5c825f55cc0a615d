// Sessions: the filtered list, and one session's chain as a timeline with its decisions, a verify button and,
// when the session has one, its AgBOM (components at any entry, in any serialization, and its versions).
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

const FORMATS = ['canonical', 'cyclonedx-1.6', 'spdx-3.0', 'swid'];

const diffSummary = (d) =>
  d ? `+${d.added?.length ?? 0} / −${d.removed?.length ?? 0} / ~${d.changed?.length ?? 0}` : '—';

function Agbom({ id, versions }) {
  const [at, setAt] = useState('');
  const [format, setFormat] = useState('canonical');
  const base = `/sessions/${encodeURIComponent(id)}/agbom`;
  const [doc, error] = useLoad(
    () => api(`${base}${query({ at, format })}`, { as: format === 'canonical' ? 'json' : 'text' }),
    [id, at, format],
  );
  // Until the requested serialization arrives, the previous one may still be loaded: show each only as itself.
  const canonical = format === 'canonical' && doc && typeof doc === 'object' ? doc : null;
  const text = format !== 'canonical' && typeof doc === 'string' ? doc : null;
  const components = canonical ? (canonical.agbom?.components ?? []) : null;
  return html`<section aria-labelledby="agbom-heading" id="agbom">
    <h2 id="agbom-heading">AgBOM</h2>
    <div class="filters">
      <label
        >At entry
        <select value=${at} onChange=${(e) => setAt(e.currentTarget.value)}>
          <option value="">latest</option>
          ${versions.map((v) => html`<option value=${String(v.seq)}>#${v.seq} ${v.method}</option>`)}
        </select></label
      >
      <label
        >Format
        <select value=${format} onChange=${(e) => setFormat(e.currentTarget.value)}>
          ${FORMATS.map((f) => html`<option>${f}</option>`)}
        </select></label
      >
    </div>
    <${ErrorNote} error=${error} />
    ${components &&
    html`<p class="muted" id="agbom-hash">
        ${components.length} components at entry #${canonical.metadata?.chain_seq} · agbom_hash <code>${canonical.agbom_hash}</code>
      </p>
      <table id="agbom-components">
        <thead><tr><th>Type</th><th>Name</th><th>Version</th><th>Id</th></tr></thead>
        <tbody>
          ${components.map(
            (c) => html`<tr><td>${c.type}</td><td>${c.name ?? '—'}</td><td>${c.version ?? '—'}</td><td><code>${c.id}</code></td></tr>`,
          )}
        </tbody>
      </table>`}
    ${text && html`<pre aria-label=${`AgBOM as ${format}`}>${text}</pre>`}
    <h3>Versions</h3>
    <table id="agbom-versions">
      <thead><tr><th>Entry</th><th>Method</th><th>Form</th><th>Adopted</th><th>Added / removed / changed</th><th>Problems</th></tr></thead>
      <tbody>
        ${versions.map(
          (v) => html`<tr>
            <td>#${v.seq}</td>
            <td><code>${v.method}</code></td>
            <td>${v.form}</td>
            <td>${v.adopted ? 'yes' : html`<span class="error">no (refused)</span>`}</td>
            <td>${v.form === 'diff' ? diffSummary(v.diff) : 'full document'}</td>
            <td>${v.problems.length ? html`<${Codes} codes=${v.problems.map((p) => p.code ?? JSON.stringify(p))} />` : '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

export function SessionPage({ id }) {
  const [detail, error] = useLoad(() => api(`/sessions/${encodeURIComponent(id)}`), [id]);
  const [entries, entriesError] = useLoad(() => api(`/sessions/${encodeURIComponent(id)}/entries?limit=500`), [id]);
  // Sessions without an AgBOM have no versions; a Guardian without AgBOM storage answers 503: no section then.
  const [agbom] = useLoad(() => api(`/sessions/${encodeURIComponent(id)}/agbom/versions`).catch(() => null), [id]);
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
    ${agbom?.versions?.length > 0 && html`<${Agbom} id=${id} versions=${agbom.versions} />`}
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
          html`<details><summary>AgBOM payload</summary><pre>${JSON.stringify(e.params?.payload, null, 2)}</pre></details>`}
          <details>
            <summary>Request and hashes</summary>
            <p class="muted">entry <code>${e.entry_hash}</code> · previous <code>${e.previous_hash ?? '—'}</code></p>
            <pre>${JSON.stringify(e.params, null, 2)}</pre>
          </details>
        </li>`,
      )}
    </ol>`;
}
