// The SPDX 3.0.1 JSON schema (test/fixtures/spdx, README there) compiled once with ajv: every SPDX document a test
// renders or exports is checked against it.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validateSpdx = ajv.compile(
  JSON.parse(
    readFileSync(new URL('../fixtures/spdx/spdx-3.0.1-export.schema.json', import.meta.url), 'utf8'),
  ) as Record<string, unknown>,
);

/** The schema's violations (the if/then/else branches not taken are left out: they only say "not a <class>"). */
export function spdxProblems(doc: unknown): { instancePath: string; message?: string; params: unknown }[] {
  if (validateSpdx(doc)) return [];
  return (validateSpdx.errors ?? [])
    .filter(
      (e) =>
        !['if', 'anyOf', 'oneOf'].includes(e.keyword) &&
        !(e.keyword === 'const' && String((e.params as { allowedValue?: unknown }).allowedValue).startsWith('Not a ')),
    )
    .map((e) => ({ instancePath: e.instancePath, message: e.message, params: e.params }));
}

export function expectSpdxValid(doc: unknown): void {
  const ok = validateSpdx(doc);
  expect(ok ? [] : spdxProblems(doc)).toEqual([]);
  expect(ok).toBe(true);
}
