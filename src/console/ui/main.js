// The operator console (docs/console.md): Preact components written with htm tagged templates (no JSX step),
// hash routes, one page per task. What a role may do is the API's decision; the console only hides buttons
// the signed-in role could not use.
import { render } from 'preact';
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, token } from './api.js';
import { AuditPage } from './pages/audit.js';
import { BundlesPage } from './pages/bundles.js';
import { DashboardPage } from './pages/dashboard.js';
import { DecisionsPage } from './pages/decisions.js';
import { LivePage } from './pages/live.js';
import { ReplayPage } from './pages/replay.js';
import { SessionPage, SessionsPage } from './pages/sessions.js';
import './console.css';

const NAV = [
  ['#/dashboard', 'Dashboard'],
  ['#/sessions', 'Sessions'],
  ['#/decisions', 'Decisions'],
  ['#/live', 'Live'],
  ['#/bundles', 'Bundles'],
  ['#/replay', 'Replay'],
  ['#/audit', 'Audit log'],
];

function useHash() {
  const [hash, setHash] = useState(location.hash || '#/sessions');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/sessions');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function Login({ onSignedIn }) {
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const value = new FormData(e.currentTarget).get('token').trim();
    try {
      const me = await api('/whoami', { withToken: value });
      token.set(value);
      onSignedIn(me);
    } catch (err) {
      setError(err.status === 401 ? 'That token is not valid.' : err.message);
    }
  };
  return html`<main class="login">
    <h1>Guardian console</h1>
    <form onSubmit=${submit}>
      <label for="token">Admin token</label>
      <input id="token" name="token" type="password" autocomplete="off" required autofocus />
      <button type="submit">Sign in</button>
      ${error && html`<p role="alert" class="error">${error}</p>`}
    </form>
  </main>`;
}

function Page({ hash, me }) {
  const [path, id] = hash.slice(2).split('/');
  switch (path) {
    case 'dashboard':
      return html`<${DashboardPage} />`;
    case 'sessions':
      return id ? html`<${SessionPage} id=${decodeURIComponent(id)} />` : html`<${SessionsPage} />`;
    case 'decisions':
      return html`<${DecisionsPage} />`;
    case 'live':
      return html`<${LivePage} />`;
    case 'bundles':
      return html`<${BundlesPage} me=${me} />`;
    case 'replay':
      return html`<${ReplayPage} me=${me} />`;
    case 'audit':
      return html`<${AuditPage} />`;
    default:
      return html`<p>No such page.</p>`;
  }
}

function App() {
  const [me, setMe] = useState(null);
  const [checking, setChecking] = useState(Boolean(token.get()));
  const hash = useHash();
  useEffect(() => {
    if (!token.get()) return;
    api('/whoami')
      .then(setMe)
      .catch(() => token.clear())
      .finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p>Loading…</p>`;
  if (!me) return html`<${Login} onSignedIn=${setMe} />`;
  const signOut = () => {
    token.clear();
    setMe(null);
  };
  const section = hash.slice(2).split('/')[0];
  return html`<header>
      <strong>Guardian console</strong>
      <nav aria-label="Main">
        ${NAV.map(
          ([href, label]) =>
            html`<a href=${href} aria-current=${href.slice(2) === section ? 'page' : undefined}>${label}</a>`,
        )}
      </nav>
      <span class="who" data-role=${me.role}>Signed in as ${me.name} (${me.role})</span>
      <button type="button" onClick=${signOut}>Sign out</button>
    </header>
    <main><${Page} hash=${hash} me=${me} /></main>`;
}

render(html`<${App} />`, document.getElementById('app'));
