// The two lines OPA prints under a parse error (ast.ParserErrorDetail): the source line holding the error's
// offset, then a caret under it. OPA steps back from the offset over whitespace (so an error at the end of the
// input points at the last character), drops the line's leading tabs and counts the caret's column in bytes.
import { utf8Bytes } from '../utf8.ts';

const isNewline = (c: string | undefined): boolean => c === '\n' || c === '\r';
const isSpace = (c: string | undefined): boolean =>
  c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';

/** The detail lines for an error at `offset` (a character index into `text`). */
export function parseErrorDetails(text: string, offset: number): string[] {
  if (text.length === 0) return ['', '^'];
  let at = offset >= text.length ? text.length - 1 : Math.max(0, offset);
  while (at > 0 && isSpace(text[at])) at--;
  let begin = at;
  while (begin > 0 && !isNewline(text[begin])) begin--;
  if (isNewline(text[begin])) begin++;
  let end = at;
  while (end < text.length && !isNewline(text[end])) end++;
  if (begin > end) begin = end;
  const line = text.slice(begin, end);
  const index = begin <= at ? utf8Bytes(text.slice(begin, at)).length : 0;
  const trimmed = line.replace(/^\t+/, '');
  const indent = Math.max(0, index - (line.length - trimmed.length));
  return [trimmed, `${' '.repeat(indent)}^`];
}
