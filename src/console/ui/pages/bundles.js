// Bundles: the active revision, the registry with activation (confirmed), rollback, and the activation history.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, canOperate, time, useLoad } from '../view.js';

export function BundlesPage({ me }) {
  const [status, statusError, reloadStatus] = useLoad(() => api('/status'), []);
  const [list, listError, reloadList] = useLoad(() => api('/bundles'), []);
  const [history, historyError, reloadHistory] = useLoad(() => api('/activations'), []);
  const [notice, setNotice] = useState(null);
  const reload = () => {
    reloadStatus();
    reloadList();
    reloadHistory();
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
              </button>`}
            </td>
          </tr>`,
        )}
      </tbody>
    </table>
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
