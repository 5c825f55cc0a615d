// The admin audit log: every state-changing admin call, newest first.
import { html } from 'htm/preact';
import { api } from '../api.js';
import { ErrorNote, time, useLoad } from '../view.js';

export function AuditPage() {
  const [page, error] = useLoad(() => api('/audit?limit=200'), []);
  return html`<h1>Admin audit log</h1>
    <${ErrorNote} error=${error} />
    <table>
      <thead><tr><th>When</th><th>Who</th><th>Role</th><th>Action</th><th>Target</th><th>Result</th><th>Detail</th></tr></thead>
      <tbody>
        ${(page?.entries ?? []).map(
          (e) => html`<tr class=${`audit-${e.outcome}`}>
            <td>${time(e.at)}</td>
            <td>${e.actor}</td>
            <td>${e.role}</td>
            <td><code>${e.action}</code></td>
            <td>${e.target ?? '—'}</td>
            <td>${e.outcome} (${e.status})</td>
            <td>${e.detail ?? ''}</td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}
