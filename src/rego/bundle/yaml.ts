// YAML data files read the way OPA reads them: sigs.k8s.io/yaml converts YAML to JSON through go-yaml v2
// (YAMLToJSON: yaml.Unmarshal of the first document, then json.Marshal), and its error is go-yaml's
// (`yaml: line 3: mapping values are not allowed in this context`) or encoding/json's (`json: unsupported value:
// NaN`). The document is read with the `yaml` package; go-yaml's text is given for the mistakes people make in
// data files (tabs in the indentation, a key out of line, a missing `: `, an unclosed quote or bracket, an
// undefined alias, bytes go-yaml's reader refuses, a null key). For the rarer ones (directives, explicit tags
// that do not fit their value) the `yaml` package's own description follows `yaml: `.
import { type Document, isAlias, isCollection, isMap, isScalar, parseAllDocuments, visit, type YAMLError } from 'yaml';
import { goQuote } from '../builtins/host/format.ts';
import { DecimalText } from '../json.ts';

/** A YAML data file go-yaml (or sigs.k8s.io/yaml's JSON step) refuses, with that text. */
export class YamlDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'YamlDataError';
  }
}

/**
 * go-yaml's reader (readerc.go): the text of UTF-8 input, or its error. A UTF-8 BOM is skipped; a character outside
 * YAML's printable set is `control characters are not allowed`. Reader errors carry no line.
 */
function readInput(bytes: Uint8Array): string {
  const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  let i = start;
  const fail = (problem: string): never => {
    throw new YamlDataError(`yaml: ${problem}`);
  };
  while (i < bytes.length) {
    const c = bytes[i];
    let width: number;
    let cp: number;
    if (c < 0x80) {
      width = 1;
      cp = c;
    } else {
      width = (c & 0xe0) === 0xc0 ? 2 : (c & 0xf0) === 0xe0 ? 3 : (c & 0xf8) === 0xf0 ? 4 : 0;
      if (width === 0) fail('invalid leading UTF-8 octet');
      if (i + width > bytes.length) fail('incomplete UTF-8 octet sequence');
      cp = c & (width === 2 ? 0x1f : width === 3 ? 0x0f : 0x07);
      for (let k = 1; k < width; k++) {
        if ((bytes[i + k] & 0xc0) !== 0x80) fail('invalid trailing UTF-8 octet');
        cp = (cp << 6) | (bytes[i + k] & 0x3f);
      }
      if ((width === 2 && cp < 0x80) || (width === 3 && cp < 0x800) || (width === 4 && cp < 0x10000))
        fail('invalid length of a UTF-8 sequence');
      if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) fail('invalid Unicode character');
    }
    if (!isYamlPrintable(cp)) fail('control characters are not allowed');
    i += width;
  }
  return new TextDecoder().decode(bytes.subarray(start));
}

/** The characters go-yaml's reader lets through (YAML 1.1 c-printable). */
function isYamlPrintable(cp: number): boolean {
  return (
    cp === 0x09 ||
    cp === 0x0a ||
    cp === 0x0d ||
    (cp >= 0x20 && cp <= 0x7e) ||
    cp === 0x85 ||
    (cp >= 0xa0 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    cp >= 0x10000
  );
}

/** The 0-based line of offset `pos` in `text` (go-yaml counts CR LF, CR and LF as one break each). */
function lineAt(text: string, pos: number): number {
  let line = 0;
  for (let i = 0; i < pos && i < text.length; i++) {
    const c = text[i];
    if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line++;
  }
  return line;
}

/**
 * go-yaml's parser.fail(): a scanner error names the 1-based line of its mark, a parser error the 0-based line of
 * the token it refused, and a mark on the first line is not printed at all.
 */
function goYamlText(problem: string, line: number): string {
  return line > 0 ? `yaml: line ${line}: ${problem}` : `yaml: ${problem}`;
}

const scannerError = (problem: string, line0: number): string => goYamlText(problem, line0 > 0 ? line0 + 1 : 0);
const parserError = (problem: string, line0: number): string => goYamlText(problem, line0);

/** Where go-yaml meets the end of the input: a last line without a break counts as ended (fetch_stream_end). */
function endLine(text: string): number {
  const line = lineAt(text, text.length);
  return text.length > 0 && !/[\r\n]$/.test(text) ? line + 1 : line;
}

/** The first `:` at or after `pos` that is a mapping indicator (followed by a blank or the end). */
function mappingIndicator(text: string, pos: number): number | undefined {
  const re = /:(?=[ \t\r\n]|$)/g;
  re.lastIndex = pos;
  return re.exec(text)?.index;
}

/** The text of line `line0` (0-based). */
function lineText(text: string, line0: number): string {
  return text.split(/\r\n|\r|\n/)[line0] ?? '';
}

/** The first non-blank line before line `line0` that is not a comment, without its indentation. */
function previousContent(text: string, line0: number): { indent: number; content: string } | undefined {
  const lines = text.split(/\r\n|\r|\n/);
  for (let l = line0 - 1; l >= 0; l--) {
    const content = lines[l].trimStart();
    if (content !== '' && !content.startsWith('#')) return { indent: lines[l].length - content.length, content };
  }
  return undefined;
}

/** go-yaml's text for the first error the `yaml` package found, where the two agree on what is wrong. */
function translate(text: string, err: YAMLError): string {
  const pos = err.pos[0];
  // The end of input ends a last line without a break first (go-yaml's STREAM-END mark).
  const line0 = pos >= text.length ? endLine(text) : lineAt(text, pos);
  const content = lineText(text, line0).trimStart();
  const indent = lineText(text, line0).length - content.length;
  switch (err.code) {
    case 'TAB_AS_INDENT': {
      // After a plain scalar the tab is part of the whitespace the scalar may continue over; elsewhere it is where
      // a token may start a line (scan_to_next_token skips spaces only).
      const prev = previousLine(text, line0);
      if (prev !== undefined && endsInPlainScalar(prev))
        return scannerError('found a tab character that violates indentation', line0);
      return scannerError('found character that cannot start any token', line0);
    }
    case 'MISSING_CHAR':
      if (/^Missing closing ["']quote/.test(err.message)) {
        // Inside a quoted scalar a line starting `---` or `...` ends the document; else the input ends first.
        const indicator = /(?:\r\n|\r|\n)(?:---|\.\.\.)(?=[ \t\r\n]|$)/.exec(text);
        if (indicator) return scannerError('found unexpected document indicator', lineAt(text, indicator.index) + 1);
        return scannerError('found unexpected end of stream', lineAt(text, text.length));
      }
      if (err.message.startsWith('Implicit map keys need to be followed by map values'))
        return missingColon(text, pos, /^["']/.test(text.slice(pos)));
      if (err.message.startsWith('Sequence item without - indicator'))
        return parserError("did not find expected '-' indicator", line0);
      break;
    case 'BLOCK_AS_IMPLICIT_KEY':
    case 'MULTILINE_IMPLICIT_KEY':
    case 'KEY_OVER_1024_CHARS':
      // A `- ` where a key of the enclosing mapping was due, or inside a flow sequence.
      if (/^[ \t]*-(?:[ \t]|$)/.test(text.slice(pos)) && err.code !== 'KEY_OVER_1024_CHARS')
        return err.message.startsWith('Implicit keys of flow sequence pairs')
          ? parserError('did not find expected node content', line0)
          : parserError('did not find expected key', line0);
      // A `: ` after a value, or after a key that is no simple key (over two lines, or too long).
      if (err.code !== 'BLOCK_AS_IMPLICIT_KEY' || err.message.startsWith('Nested mappings')) {
        const colon = mappingIndicator(text, pos);
        if (colon !== undefined)
          return scannerError('mapping values are not allowed in this context', lineAt(text, colon));
      }
      break;
    case 'BAD_INDENT': {
      if (/^Flow (sequence|map) in block collection/.test(err.message)) {
        // An unclosed flow collection: after a `,` a node was due, else the `,` or the closing bracket.
        const before = text.slice(0, pos).trimEnd();
        if (before.endsWith(',') || before.endsWith('[') || before.endsWith('{'))
          return parserError('did not find expected node content', line0);
        return parserError(`did not find expected ',' or '${err.message.includes('sequence') ? ']' : '}'}'`, line0);
      }
      if (err.message.startsWith('All sequence items must start at the same column'))
        return parserError("did not find expected '-' indicator", line0);
      if (!err.message.startsWith('All mapping items must start at the same column')) break;
      // A key out of line with the keys before it: with its `: ` the enclosing collection refuses it; without, a
      // key at the indentation of the sequence above wants its `:` by the next token.
      if (mappingIndicator(content, 0) !== undefined) return parserError('did not find expected key', line0);
      const prev = previousContent(text, line0);
      if (prev && prev.indent === indent && /^-(?:[ \t]|$)/.test(prev.content))
        return missingColon(text, pos, /^["']/.test(content));
      return parserError('did not find expected key', line0);
    }
    case 'UNEXPECTED_TOKEN': {
      // What follows a complete value on its line, where the block mapping wanted its next key; a closing bracket
      // with no value before it is a node that never started.
      const afterValue = /[^ \t]$/.test(
        text
          .slice(0, pos)
          .split(/\r\n|\r|\n/)
          .pop() ?? '',
      );
      if (/^Unexpected flow-(seq|map)-end token/.test(err.message))
        return afterValue && /[\]}]$/.test(text.slice(0, pos).trimEnd())
          ? parserError('did not find expected key', line0)
          : parserError('did not find expected node content', line0);
      if (err.message.startsWith('Unexpected scalar at node end')) {
        if (afterValue) return parserError('did not find expected key', line0);
        // A scalar at the left margin after a block sequence: a key, which wants its `:`.
        if (mappingIndicator(content, 0) === undefined) return missingColon(text, pos, /^["']/.test(content));
      }
      break;
    }
    case 'BAD_ALIAS':
      if (/^(Alias|Anchor) cannot be an empty string/.test(err.message))
        return scannerError('did not find expected alphabetic or numeric character', line0);
      break;
    case 'TAG_RESOLVE_FAILED':
      if (err.message.startsWith('Verbatim tags must end with a >'))
        return scannerError("did not find the expected '>'", line0);
      break;
    case 'BAD_DQ_ESCAPE':
      return scannerError('found unknown escape character', line0);
    case 'BAD_SCALAR_START':
      return scannerError('found character that cannot start any token', line0);
  }
  return otherError(err.message);
}

/** go-yaml's text for an error the `yaml` package reports in words go-yaml does not share. */
function otherError(message: string): string {
  if (message.startsWith('Merge sources must be maps or map aliases'))
    return 'yaml: map merge requires map or sequence of maps as the value';
  return `yaml: ${message.split('\n')[0]}`;
}

/**
 * A tab at the start of an otherwise blank line after a plain scalar inside a collection: the whitespace the scalar
 * may continue over, where go-yaml refuses tabs left of the indentation (the `yaml` package lets it pass).
 */
function blankLineTab(text: string, doc: Document): number | undefined {
  if (!isCollection(doc.contents) || doc.contents.flow) return undefined;
  const lines = text.split(/\r\n|\r|\n/);
  for (let l = 1; l < lines.length; l++) {
    if (!/^\t[ \t]*$/.test(lines[l])) continue;
    const prev = previousLine(text, l);
    if (prev !== undefined && endsInPlainScalar(prev)) return l;
  }
  return undefined;
}

/** The line before `line0` that is not blank, or undefined. */
function previousLine(text: string, line0: number): string | undefined {
  const lines = text.split(/\r\n|\r|\n/);
  for (let l = line0 - 1; l >= 0; l--) if (lines[l].trim() !== '') return lines[l];
  return undefined;
}

/** Whether a line ends in a plain scalar (no `:`, comment, quote, bracket or block scalar indicator after it). */
function endsInPlainScalar(line: string): boolean {
  const t = line.trim();
  if (t.startsWith('#') || /[ \t]#/.test(t) || t === '-') return false;
  return !/[:"'\]}|>,[{-]$/.test(t);
}

/**
 * go-yaml's ending of a scan that stopped after a document the `yaml` package refused only for what follows
 * it: a root flow collection or quoted scalar followed by a scalar on its line is, to go-yaml, a first document and
 * the start of a second one, which Unmarshal never reads.
 */
function endsFirstDocument(doc: Document, err: YAMLError): boolean {
  if (err.code !== 'UNEXPECTED_TOKEN' || !err.message.startsWith('Unexpected scalar at node end')) return false;
  const root = doc.contents;
  return (
    (isCollection(root) && root.flow === true) ||
    (isScalar(root) && (root.type === 'QUOTE_DOUBLE' || root.type === 'QUOTE_SINGLE'))
  );
}

/** fmt's %#v of a value go-yaml decoded (what sigs.k8s.io/yaml and go-yaml print in their key errors). */
function goSyntax(v: unknown, inCollection = false): string {
  if (v === null || v === undefined) return inCollection ? 'interface {}(nil)' : '<nil>';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21 ? v.toFixed(0) : String(v);
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map((x) => goSyntax(x, true)).join(', ')}}`;
  if (v instanceof Map) {
    const entries = [...v.entries()]
      .map(([k, x]) => [goSyntax(k, true), goSyntax(x, true)])
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[interface {}]interface {}{${entries.map(([k, x]) => `${k}:${x}`).join(', ')}}`;
  }
  return String(v);
}

/**
 * What go-yaml's decoder and sigs.k8s.io/yaml refuse in a document the `yaml` package accepts, in their order: an
 * alias inside the node its anchor names, a sequence or mapping as a key (decoding), then a null key (the JSON
 * step, `unsupported map key of type: %!s(<nil>), …`).
 */
function checkKeys(doc: Document, text: string): void {
  const parentFlow = (path: readonly unknown[]): boolean => {
    const parent = path[path.length - 1];
    return isCollection(parent) && parent.flow === true;
  };
  let decodeError: string | undefined;
  let nullKey: string | undefined;
  visit(doc, {
    Alias(_, node, path) {
      const source = node.resolve(doc);
      if (source && path.includes(source)) {
        decodeError = `yaml: anchor '${node.source}' value contains itself`;
        return visit.BREAK;
      }
      return undefined;
    },
    Pair(_, pair, _path) {
      const key = pair.key;
      if (isCollection(key) || (isAlias(key) && isCollection(key.resolve(doc)))) {
        decodeError = `yaml: invalid map key: ${goSyntax(toGo(key, doc))}`;
        return visit.BREAK;
      }
      // `: value` opening a block mapping entry (no key, no `?`): go-yaml's parser wanted a key there.
      const at = isScalar(key) && key.source === '' && key.range ? key.range[0] : undefined;
      if (at !== undefined && text[at] === ':' && !parentFlow(_path)) {
        decodeError = parserError('did not find expected key', lineAt(text, at));
        return visit.BREAK;
      }
      if (nullKey === undefined && (key === null || (isScalar(key) && key.value === null))) {
        nullKey = `unsupported map key of type: %!s(<nil>), key: <nil>, value: ${goSyntax(toGo(pair.value, doc))}`;
      }
      return undefined;
    },
  });
  if (decodeError) throw new YamlDataError(decodeError);
  if (nullKey) throw new YamlDataError(nullKey);
}

/** A node as go-yaml decodes it into interface{} (mappings as maps with keys of any type). */
function toGo(node: unknown, doc: Document): unknown {
  if (node === null || node === undefined) return null;
  if (isAlias(node)) return toGo(node.resolve(doc), doc);
  if (isScalar(node)) return node.value;
  if (isMap(node)) return new Map(node.items.map((p) => [toGo(p.key, doc), toGo(p.value, doc)]));
  if (isCollection(node)) return node.items.map((x) => toGo(x, doc));
  return null;
}

/**
 * A key on a line of its own: go-yaml's error comes where the scanner stands next, or at the end. After a plain
 * scalar that is the first character that is not whitespace (the scalar stops at a comment); after a quoted one,
 * the next token (comments skipped).
 */
function missingColon(text: string, pos: number, quoted: boolean): string {
  const next = quoted ? /^[ \t]*[^ \t\r\n#]/ : /^[ \t]*[^ \t\r\n]/;
  const lines = text.slice(pos).split(/(?<=\r\n|\r(?!\n)|\n)/);
  let offset = pos + lines[0].length;
  for (const l of lines.slice(1)) {
    if (next.test(l)) return scannerError("could not find expected ':'", lineAt(text, offset));
    offset += l.length;
  }
  return scannerError("could not find expected ':'", endLine(text));
}

const INT64_MIN = -(2n ** 63n);
const UINT64_END = 2n ** 64n;

/**
 * go-yaml v2 resolves an integer to an int64, else a uint64, else a float64 (resolve.go), and json.Marshal writes
 * the first two exactly; OPA then reads that JSON with UseNumber. So an integer past 2^53 in that range keeps its
 * digits (DecimalText), and one beyond it is the nearest double. Floats are float64s in go-yaml too.
 */
function goYamlIntegers(v: unknown): unknown {
  if (typeof v === 'bigint') {
    if (v >= INT64_MIN && v < UINT64_END && !Number.isSafeInteger(Number(v))) return new DecimalText(v.toString());
    return Number(v);
  }
  if (Array.isArray(v)) return v.map(goYamlIntegers);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, goYamlIntegers(x)]));
  return v;
}

/** encoding/json's Marshal refuses the floats JSON has no text for (`json: unsupported value: NaN`). */
function checkJsonable(v: unknown): void {
  if (typeof v === 'number' && !Number.isFinite(v))
    throw new YamlDataError(`json: unsupported value: ${Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf'}`);
  if (Array.isArray(v)) for (const x of v) checkJsonable(x);
  else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) checkJsonable(x);
}

/**
 * The value of a YAML data file as OPA's loader sees it: YAML 1.1 (`yes`/`on` are booleans), only the
 * first document of a multi-document stream (go-yaml v2's Unmarshal stops after it), a key given twice keeping its
 * last value, and application tags such as CloudFormation's `!Ref` / `!GetAtt` taken as the plain scalar, sequence
 * or mapping they tag, without a warning. An empty file is `null`. Errors are YamlDataError, with go-yaml's text.
 */
export function parseYamlData(input: string | Uint8Array): unknown {
  const text = typeof input === 'string' ? input : readInput(input);
  const docs = parseAllDocuments(text, { version: '1.1', logLevel: 'error', uniqueKeys: false, intAsBigInt: true });
  const first = docs[0];
  if (!first) return null;
  if (first.errors.length > 0 && !endsFirstDocument(first, first.errors[0]))
    throw new YamlDataError(translate(text, first.errors[0]));
  const tabLine = blankLineTab(text, first);
  if (tabLine !== undefined)
    throw new YamlDataError(scannerError('found a tab character that violates indentation', tabLine));
  checkKeys(first, text);
  let value: unknown;
  try {
    value = first.toJS() ?? null;
  } catch (e) {
    const alias = /^Unresolved alias \(the anchor must be set before the alias\): (.*)$/.exec((e as Error).message);
    if (alias) throw new YamlDataError(`yaml: unknown anchor '${alias[1]}' referenced`);
    throw new YamlDataError(otherError((e as Error).message));
  }
  checkJsonable(value);
  return goYamlIntegers(value);
}
