/** Deterministic xorshift32, so a failing random case reproduces from its seed: the function returns an integer in [0, n). */
export function seededBelow(seed: number): (n: number) => number {
  let state = seed | 0;
  return (n) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % n;
  };
}
