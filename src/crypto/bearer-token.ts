// Bearer tokens (admin API, /metrics) compared in constant time: both sides are hashed first, so neither the
// token's length nor the position of the first differing byte shows in the timing.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Whether the presented token equals the expected one, in time independent of where they differ. */
export function bearerTokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}
