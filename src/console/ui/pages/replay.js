// Replay: start a job against a registry revision, watch its progress, read the diff (transitions, reason code
// and rule changes).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, stream } from '../api.js';
import { ErrorNote, canOperate, useLoad } from '../view.js';

const Counts = ({ title, counts }) =>
  html`<h3>${title}</h3>
    <table>
      <tbody>
        ${Object.entries(counts ?? {}).map(
          ([k, v]) => html`<tr><td><code>${k}</code></td><td>${typeof v === 'number' ? v : `+${v.added} / −${v.removed}`}</td></tr>`,
        )}
      </tbody>
    </table>`;

function Job({ job }) {
  const [progress, setProgress] = useState(null);
  const [report, reportError, reload] = useLoad(
    () => (job.status === 'running' ? Promise.resolve(null) : api(`/replay/${job.id}/report`)),
    [job.id, job.status],
  );
  const watch = async () => {
    await stream(`/replay/${job.id}/events`, ({ event, data }) => {
      if (event === 'progress') setProgress(data);
      if (event === 'done' || event === 'failed') {
        job.status = data.status;
        reload();
      }
    });
  };
  if (job.status === 'running' && !progress) watch();
  const s = report?.summary;
  return html`<section class="job" aria-label=${`Replay ${job.id}`}>
    <h2>Replay against ${job.against}</h2>
    <p aria-live="polite" id="replay-status">
      ${job.status === 'running' ? `Running… ${progress?.processed ?? 0} entries` : `Status: ${job.status}`}
    </p>
    <${ErrorNote} error=${reportError} />
    ${s &&
    html`<p id="replay-summary">${s.selected} steps replayed: ${s.changed} changed, ${s.unchanged} unchanged</p>
      <${Counts} title="Transitions" counts=${s.transitions} />
      <${Counts} title="Reason codes" counts=${s.reasonCodes} />
      <${Counts} title="Rules" counts=${s.rules} />`}
  </section>`;
}

export function ReplayPage({ me }) {
  const [bundles] = useLoad(() => api('/bundles'), []);
  const [jobs, jobsError, reloadJobs] = useLoad(() => api('/replay'), []);
  const [current, setCurrent] = useState(null);
  const [error, setError] = useState(null);
  const start = async (e) => {
    e.preventDefault();
    const form = Object.fromEntries([...new FormData(e.currentTarget)].filter(([, v]) => v !== ''));
    try {
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
      <label>Agent <input name="agent" /></label>
      <label>Session <input name="session" /></label>
      <button type="submit">Start replay</button>
    </form>`}
    <${ErrorNote} error=${error ?? jobsError} />
    ${current && html`<${Job} key=${current.id} job=${current} />`}
    <h2>Jobs</h2>
    <ul>
      ${(jobs?.jobs ?? []).map(
        (j) => html`<li><button type="button" class="link" onClick=${() => setCurrent(j)}>${j.against}: ${j.status} (${j.id.slice(0, 8)})</button></li>`,
      )}
    </ul>`;
}
