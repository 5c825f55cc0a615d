// Values written to the store's jsonb columns (heartbeat status, shadow decisions).
import type { Json } from '../../json.ts';

/** A value as the JSON a jsonb column stores (undefined members dropped, as JSON.stringify drops them). */
export function jsonOf(value: unknown): Json {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as Json);
}
