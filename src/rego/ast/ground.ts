import type { Term } from './types.ts';

/** Whether a term holds no variable, reference or call (OPA's IsGround). */
export function isGround(t: Term): boolean {
  switch (t.type) {
    case 'null':
    case 'boolean':
    case 'number':
    case 'string':
      return true;
    case 'array':
    case 'set':
      return t.value.every(isGround);
    case 'object':
      return t.value.every(([k, v]) => isGround(k) && isGround(v));
    default:
      return false;
  }
}
