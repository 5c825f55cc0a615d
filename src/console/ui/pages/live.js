// Live decisions: the feed stream, newest first (at most 200 kept on screen).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { stream } from '../api.js';
import { ErrorNote } from '../view.js';
import { DecisionRows } from './decisions.js';

export function LivePage() {
  const [rows, setRows] = useState([]);
  const [state, setState] = useState('connecting');
  const [error, setError] = useState(null);
  useEffect(() => {
    const ctl = new AbortController();
    stream(
      '/decisions/feed',
      ({ event, data }) => {
        if (event === 'open') setState('live');
        if (event === 'decision') setRows((r) => [data, ...r].slice(0, 200));
      },
      ctl.signal,
    ).catch(setError);
    return () => ctl.abort();
  }, []);
  return html`<h1>Live decisions</h1>
    <p aria-live="polite" id="feed-state">${state === 'live' ? 'Receiving decisions as they are made.' : 'Connecting…'}</p>
    <${ErrorNote} error=${error} />
    <${DecisionRows} decisions=${rows} />`;
}
