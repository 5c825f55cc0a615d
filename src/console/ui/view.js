// Small pieces every page uses: a decision badge, times, errors, a loader hook.
import { html } from 'htm/preact';
import { useCallback, useEffect, useState } from 'preact/hooks';

export const Badge = ({ decision }) =>
  decision ? html`<span class="badge badge-${decision}">${decision}</span>` : html`<span class="badge">none</span>`;

export const time = (iso) => (iso ? new Date(iso).toLocaleString() : '—');

export const ErrorNote = ({ error }) => (error ? html`<p role="alert" class="error">${error.message}</p>` : null);

/** Runs `load` now and whenever `deps` change; returns [value, error, reload]. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ value: null, error: null });
  const run = useCallback(() => {
    load()
      .then((value) => setState({ value, error: null }))
      .catch((error) => setState({ value: null, error }));
  }, deps);
  useEffect(run, [run]);
  return [state.value, state.error, run];
}

export const canOperate = (me) => me.role === 'operator' || me.role === 'admin';

export const Codes = ({ codes }) =>
  codes?.length ? html`<ul class="codes">${codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>` : null;

export const PolicyRefs = ({ refs }) =>
  refs?.length
    ? html`<ul class="refs">
        ${refs.map((r) => html`<li>${[r.policy_id, r.policy_version, r.rule_id].filter(Boolean).join(' · ')}</li>`)}
      </ul>`
    : null;

/** The disposition filter of the search forms (ACS §6 dispositions). */
export const DispositionSelect = () =>
  html`<label
    >Disposition
    <select name="disposition">
      <option value="">any</option>
      ${['allow', 'deny', 'modify', 'ask', 'defer'].map((d) => html`<option>${d}</option>`)}
    </select></label
  >`;
