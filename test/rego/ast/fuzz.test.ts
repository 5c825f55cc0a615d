// Hostile input: random token soup must end in an AST or a RegoErrors, never another exception or a hang.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseModule, parseQuery } from '../../../src/rego/ast/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';

const FRAGMENTS = [
  'package p',
  'import rego.v1',
  'import data.x as y',
  'default',
  'p',
  'q',
  'x',
  'input',
  'data',
  '_',
  'f',
  'if',
  'else',
  'contains',
  'some',
  'every',
  'in',
  'not',
  'with',
  'as',
  ':=',
  '=',
  '==',
  '!=',
  '<',
  '>=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '|',
  '&',
  '{',
  '}',
  '[',
  ']',
  '(',
  ')',
  ',',
  ';',
  '.',
  ':',
  '1',
  '-2.5e3',
  '"s"',
  '"\\u00e9"',
  '`raw`',
  'true',
  'null',
  'count(',
  'set()',
  '\n',
  ' ',
  '# c\n',
  '# METADATA\n# title: t\n',
  '"unterminated',
  '\\',
  '@',
];

function soup(parts: number[]): string {
  return parts.map((i) => FRAGMENTS[i % FRAGMENTS.length]).join(' ');
}

function parsesOrRegoError(fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof RegoErrors)) throw e;
    expect(e.errors[0].code).toBe('rego_parse_error');
    // OPA locates "empty module" at the file alone (row 0); every other error at a row of the text.
    if (e.errors[0].message === 'empty module') expect(e.errors[0].location?.row).toBe(0);
    else expect(e.errors[0].location?.row).toBeGreaterThanOrEqual(1);
  }
}

describe('parser on random input', () => {
  it('modules: AST or rego_parse_error, nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 80 }), (parts) => {
        parsesOrRegoError(() => parseModule('fuzz.rego', `package fuzz\n${soup(parts)}`));
      }),
      { numRuns: 400 },
    );
  });
  it('queries: AST or rego_parse_error, nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 60 }), (parts) => {
        parsesOrRegoError(() => parseQuery(soup(parts)));
      }),
      { numRuns: 400 },
    );
  });
  it('arbitrary unicode text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        parsesOrRegoError(() => parseModule('fuzz.rego', text));
      }),
      { numRuns: 300 },
    );
  });
  it('deeply nested mixed brackets fail cleanly', () => {
    const opens = ['[', '{', '(', '{1: ', '[x | ', 'f('];
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: opens.length - 1 }), { minLength: 200, maxLength: 2000 }),
        (idx) => {
          parsesOrRegoError(() => parseQuery(`x := ${idx.map((i) => opens[i]).join('')}1`));
        },
      ),
      { numRuns: 30 },
    );
  });
});
