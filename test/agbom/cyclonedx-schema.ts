// The official CycloneDX 1.6 JSON schema (test/fixtures/cyclonedx, with the two schemas it references) compiled
// once with ajv: every CycloneDX document a test renders or exports is checked against it.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';

const schemaOf = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/cyclonedx/${name}`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
/** A referenced schema under the URL the 1.6 schema's relative $ref resolves to. */
const referenced = (name: string) => {
  const { $id: _id, ...schema } = schemaOf(name);
  ajv.addSchema(schema, `http://cyclonedx.org/schema/${name}`);
};
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
// Formats of the 1.6 schema ajv-formats does not know: checked as the strings they are.
ajv.addFormat('iri-reference', /^\S*$/u);
ajv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
referenced('spdx.SNAPSHOT.schema.json');
referenced('jsf-0.82.SNAPSHOT.schema.json');
const validateCdx = ajv.compile(schemaOf('bom-1.6.SNAPSHOT.schema.json'));

export function expectCycloneDxValid(bom: unknown): void {
  const ok = validateCdx(bom);
  expect(ok ? [] : validateCdx.errors).toEqual([]);
}
