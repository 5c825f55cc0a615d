// Replay: start a job against a registry revision or a bundle uploaded here (registered first, not activated),
// watch its progress, read the diff (transitions, reason code and rule changes, the changed steps).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, stream } from '../api.js';
import { Badge, ErrorNote, canOperate, useLoad } from '../view.js';

const Counts = ({ title, counts }) =>
  html`<h3>${title}</h3>
    <table>
      <tbody>
        ${Object.entries(counts ?? {}).map(
          ([k, v]) => html`<tr><td><code>${k}</code></td><td>${typeof v === 'number' ? v : `+${v.added} / −${v.removed}`}</td></tr>`,
        )}
      </tbody>
    </table>`;

const changeList = (added, removed) =>
  [...(added ?? []).map((c) => `+${c}`), ...(removed ?? []).map((c) => `−${c}`)].join(' ') || '—';

/** The steps whose decision would change (and those not compared), each with the recorded and replayed decision. */
const ChangedSteps = ({ steps, omitted }) =>
  steps?.length
    ? html`<h3>Changed steps</h3>
        <table id="replay-steps">
          <thead><tr><th>Session</th><th>Seq</th><th>Method</th><th>Recorded</th><th>Replayed</th><th>Reason codes</th><th>Rules</th></tr></thead>
          <tbody>
            ${steps.map(
              (st) => html`<tr>
                <td><a href=${`#/sessions/${encodeURIComponent(st.sessionId)}`}><code>${st.sessionId.slice(0, 8)}</code></a></td>
                <td>${st.seq}</td>
                <td><code>${st.method}</code></td>
                <td><${Badge} decision=${st.recorded?.decision} /> <span class="muted">${st.recordedRevision ?? ''}</span></td>
                <td>${st.status === 'compared' ? html`<${Badge} decision=${st.replayed?.decision} />` : html`<span class="muted">${st.status}</span>`}</td>
                <td><code>${changeList(st.delta?.reasonCodesAdded, st.delta?.reasonCodesRemoved)}</code></td>
                <td><code>${changeList(st.delta?.rulesAdded, st.delta?.rulesRemoved)}</code></td>
              </tr>`,
            )}
          </tbody>
        </table>
        ${omitted > 0 && html`<p class="muted">${omitted} more not shown.</p>`}`
    : null;

function Job({ job: started, onFinished }) {
  const [job, setJob] = useState(started);
  const [progress, setProgress] = useState(null);
  const [report, reportError] = useLoad(
    () => (job.status === 'done' ? api(`/replay/${job.id}/report`) : Promise.resolve(null)),
    [job.id, job.status],
  );
  // One progress stream per running job, closed when the page or the job changes.
  useEffect(() => {
    if (started.status !== 'running') return;
    const ctl = new AbortController();
    stream(
      `/replay/${started.id}/events`,
      ({ event, data }) => {
        if (event === 'progress') setProgress(data);
        if (event === 'done' || event === 'failed') {
          setJob(data);
          onFinished();
        }
      },
      ctl.signal,
    ).catch((err) => setJob((j) => ({ ...j, error: { code: err.code ?? 'stream_failed', message: err.message } })));
    return () => ctl.abort();
  }, [started.id]);
  const s = report?.summary;
  const total = progress?.total;
  return html`<section class="job" aria-label=${`Replay ${job.id}`}>
    <h2>Replay against ${job.against}</h2>
    <p aria-live="polite" id="replay-status">
      ${job.status === 'running'
        ? html`Running… ${progress?.processed ?? 0}${total ? ` of ${total}` : ''} entries, ${progress?.changed ?? 0} changed
            ${total ? html`<progress max=${total} value=${progress?.processed ?? 0} aria-label="Replay progress"></progress>` : null}`
        : `Status: ${job.status}`}
    </p>
    ${job.error && html`<p role="alert" class="error">${job.error.code}: ${job.error.message}</p>`}
    <${ErrorNote} error=${reportError} />
    ${s &&
    html`<p id="replay-summary">${s.selected} steps replayed: ${s.changed} changed, ${s.unchanged} unchanged</p>
      <div class="columns">
        <${Counts} title="Transitions" counts=${s.transitions} />
        <${Counts} title="Reason codes" counts=${s.reasonCodes} />
        <${Counts} title="Rules" counts=${s.rules} />
      </div>
      <${ChangedSteps} steps=${report.steps} omitted=${report.stepsOmitted} />`}
  </section>`;
}

export function ReplayPage({ me }) {
  const [bundles, , reloadBundles] = useLoad(() => api('/bundles'), []);
  const [jobs, jobsError, reloadJobs] = useLoad(() => api('/replay'), []);
  const [current, setCurrent] = useState(null);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);
  const start = async (e) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const file = data.get('bundle');
    data.delete('bundle');
    const form = Object.fromEntries([...data].filter(([, v]) => v !== ''));
    try {
      setNotice(null);
      // An uploaded bundle is registered (not activated), then replayed against by its sha256.
      if (file && file.size > 0) {
        const r = await api('/bundles', { method: 'POST', body: file, headers: { 'content-type': 'application/gzip' } });
        form.against = r.record.sha256;
        setNotice(`Registered ${r.record.revision} (not active); replaying against it.`);
        reloadBundles();
      }
      setCurrent(await api('/replay', { method: 'POST', body: JSON.stringify(form), headers: { 'content-type': 'application/json' } }));
      setError(null);
      reloadJobs();
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>Replay</h1>
    ${canOperate(me) &&
    html`<form class="filters" onSubmit=${start} aria-label="Start a replay">
      <label
        >Against revision
        <select name="against" required>
          ${(bundles?.bundles ?? []).map((b) => html`<option value=${b.revision}>${b.revision}</option>`)}
        </select></label
      >
      <label
        >or a bundle file (.tar.gz)
        <input name="bundle" type="file" accept=".gz,.tar.gz,application/gzip" /></label
      >
      <label>Agent <input name="agent" /></label>
      <label>Session <input name="session" /></label>
      <button type="submit">Start replay</button>
    </form>`}
    ${notice && html`<p role="status" class="ok">${notice}</p>`}
    <${ErrorNote} error=${error ?? jobsError} />
    ${current && html`<${Job} key=${current.id} job=${current} onFinished=${reloadJobs} />`}
    <h2>Jobs</h2>
    <ul>
      ${(jobs?.jobs ?? []).map(
        (j) => html`<li><button type="button" class="link" onClick=${() => setCurrent(j)}>${j.against}: ${j.status} (${j.id.slice(0, 8)})</button></li>`,
      )}
    </ul>`;
}
