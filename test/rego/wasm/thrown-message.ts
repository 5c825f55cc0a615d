// What a call throws, as text, for the tests that compare an evaluation's error message: '(no error)' when it
// returns, so an expectation of a message fails visibly instead of passing on a value.
export function thrownMessage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  return '(no error)';
}
