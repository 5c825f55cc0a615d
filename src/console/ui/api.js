// The console's only way to the Guardian: the admin API v1 with the signed-in token (sessionStorage, gone when
// the tab closes). Server-sent event streams are read with fetch, not EventSource, because they need the
// Authorization header.
const BASE = '/admin/v1';
const KEY = 'guardian-console-token';

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.reason ?? body?.message ?? body?.error ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error ?? 'error';
  }
}

export async function api(path, { method = 'GET', body, headers = {}, as = 'json', withToken } = {}) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${withToken ?? token.get()}`, ...headers },
    body,
  });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  return as === 'text' ? res.text() : res.json();
}

export const query = (params) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};

/** Calls onEvent({event, data}) for each event of the stream at `path` until it ends or `signal` aborts. */
export async function stream(path, onEvent, signal) {
  const res = await fetch(`${BASE}${path}`, { headers: { authorization: `Bearer ${token.get()}` }, signal });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let i = buffer.indexOf('\n\n');
      while (i >= 0) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        onEvent({ event, data: data ? JSON.parse(data) : null });
        i = buffer.indexOf('\n\n');
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
}
