// Bundles: the active revision, the registry with activation (confirmed), rollback, shadow mode and its report
// (where the candidate disagreed with the enforcing bundle), and the activation history.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Badge, Codes, ErrorNote, canOperate, time, useLoad } from '../view.js';

/** A recorded decision (enforcing or shadow) of a shadow difference. */
const Verdict = ({ decision, error }) =>
  error
    ? html`<span class="error">${error}</span>`
    : html`<${Badge} decision=${decision?.decision} /> <${Codes} codes=${decision?.reason_codes} />`;

function ShadowReport({ shadow, error, me, onStop, onRefresh }) {
  const r = shadow?.report;
  return html`<section aria-labelledby="shadow-heading" id="shadow-report">
    <h2 id="shadow-heading">Shadow report</h2>
    <button type="button" onClick=${onRefresh}>Refresh report</button>
    <${ErrorNote} error=${error} />
    ${r &&
    !r.shadowSha256 &&
    html`<p>No shadow candidate. ${canOperate(me) ? 'Choose Shadow on a registry row to evaluate it beside the active bundle.' : ''}</p>`}
    ${r?.shadowSha256 &&
    html`<p id="shadow-summary">
        Candidate <strong>${r.shadowRevision ?? r.shadowSha256.slice(0, 12)}</strong>${`: ${r.differences} ${r.differences === 1 ? 'decision differs' : 'decisions differ'} from the enforcing bundle.`}
        ${canOperate(me) && html`<button type="button" onClick=${onStop}>Stop shadow</button>`}
      </p>
      <table aria-label="Differences by method">
        <thead><tr><th>Method</th><th>Enforcing</th><th>Shadow</th><th>Steps</th></tr></thead>
        <tbody>
          ${r.byMethod.map(
            (m) => html`<tr>
              <td><code>${m.method}</code></td>
              <td><${Badge} decision=${m.enforcing} /></td>
              <td><${Badge} decision=${m.shadow ?? 'error'} /></td>
              <td>${m.count}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <h3>Latest differences</h3>
      <table aria-label="Latest differences">
        <thead><tr><th>When</th><th>Method</th><th>Enforcing revision</th><th>Enforcing</th><th>Shadow</th></tr></thead>
        <tbody>
          ${r.samples.map(
            (d) => html`<tr class="shadow-sample">
              <td>${time(d.at)}</td>
              <td><code>${d.method}</code></td>
              <td>${d.enforcingRevision}</td>
              <td><${Verdict} decision=${d.enforcing} /></td>
              <td><${Verdict} decision=${d.shadow} error=${d.shadowError} /></td>
            </tr>`,
          )}
        </tbody>
      </table>`}
  </section>`;
}

export function BundlesPage({ me }) {
  const [status, statusError, reloadStatus] = useLoad(() => api('/status'), []);
  const [list, listError, reloadList] = useLoad(() => api('/bundles'), []);
  const [history, historyError, reloadHistory] = useLoad(() => api('/activations'), []);
  const [shadow, shadowError, reloadShadow] = useLoad(() => api('/shadow/report'), []);
  const [notice, setNotice] = useState(null);
  const reload = () => {
    reloadStatus();
    reloadList();
    reloadHistory();
    reloadShadow();
  };
  const setShadow = async (text, call) => {
    try {
      await call();
      setNotice({ ok: true, text });
    } catch (err) {
      setNotice({ ok: false, text: err.message });
    }
    reload();
  };
  const act = async (what, call) => {
    if (!confirm(what)) return;
    try {
      const r = await call();
      setNotice({ ok: true, text: `Active revision is now ${r.revision}.` });
    } catch (err) {
      setNotice({ ok: false, text: err.message });
    }
    reload();
  };
  const upload = async (e) => {
    e.preventDefault();
    const file = e.currentTarget.elements.bundle.files[0];
    if (!file) return;
    try {
      const r = await api('/bundles', { method: 'POST', body: file, headers: { 'content-type': 'application/gzip' } });
      setNotice({ ok: true, text: `Registered ${r.record.revision} (not active: activate or replay against it).` });
    } catch (err) {
      setNotice({ ok: false, text: err.message });
    }
    reload();
  };
  const active = status?.active;
  return html`<h1>Bundles</h1>
    <${ErrorNote} error=${statusError ?? listError ?? historyError} />
    <p id="active-revision">Active: <strong>${active ? active.revision : '—'}</strong> ${active && html`<span class="muted">since ${time(active.activatedAt)} by ${active.activatedBy ?? '—'}</span>`}</p>
    ${notice && html`<p role="status" class=${notice.ok ? 'ok' : 'error'}>${notice.text}</p>`}
    ${canOperate(me) &&
    html`<button type="button" onClick=${() => act('Roll back to the previous revision?', () => api('/rollback', { method: 'POST' }))}>
      Roll back
    </button>`}
    ${canOperate(me) &&
    html`<form class="filters" onSubmit=${upload} aria-label="Upload a bundle">
      <label>Bundle file (.tar.gz) <input name="bundle" type="file" accept=".gz,.tar.gz,application/gzip" required /></label>
      <button type="submit">Upload</button>
    </form>`}
    <h2>Registry</h2>
    <table>
      <thead><tr><th>Revision</th><th>sha256</th><th>Source</th><th>Registered</th><th></th></tr></thead>
      <tbody>
        ${(list?.bundles ?? []).map(
          (b) => html`<tr>
            <td>${b.revision}</td>
            <td><code>${b.sha256.slice(0, 12)}</code></td>
            <td>${b.source ?? '—'}</td>
            <td>${time(b.createdAt)}</td>
            <td>
              ${canOperate(me) &&
              active?.sha256 !== b.sha256 &&
              html`<button
                  type="button"
                  aria-label=${`Activate ${b.revision}`}
                  onClick=${() =>
                    act(`Activate ${b.revision} on every replica?`, () =>
                      api(`/bundles/${encodeURIComponent(b.sha256)}/activate`, { method: 'POST' }),
                    )}
                >
                  Activate
                </button>
                ${shadow?.report?.shadowSha256 !== b.sha256 &&
                html`<button
                  type="button"
                  aria-label=${`Shadow ${b.revision}`}
                  onClick=${() =>
                    setShadow(`Shadowing ${b.revision}: it is evaluated beside the active bundle, not enforced.`, () =>
                      api(`/shadow/${encodeURIComponent(b.sha256)}`, { method: 'PUT' }),
                    )}
                >
                  Shadow
                </button>`}`}
            </td>
          </tr>`,
        )}
      </tbody>
    </table>
    <${ShadowReport}
      shadow=${shadow}
      error=${shadowError}
      me=${me}
      onRefresh=${reloadShadow}
      onStop=${() => setShadow('Shadow mode is off.', () => api('/shadow', { method: 'DELETE' }))}
    />
    <h2>Activation history</h2>
    <table>
      <thead><tr><th>Revision</th><th>By</th><th>When</th></tr></thead>
      <tbody>
        ${(history?.activations ?? []).map(
          (a) => html`<tr><td>${a.revision}</td><td>${a.activatedBy ?? '—'}</td><td>${time(a.activatedAt)}</td></tr>`,
        )}
      </tbody>
    </table>`;
}
