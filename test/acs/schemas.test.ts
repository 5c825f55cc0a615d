// The shipped ACS schemas are valid against their meta-schema. The validator skips this check when it loads them
// (src/acs/validation), so this is where a broken schema file is caught.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { loadAcsSchemas } from '../../src/acs/schemas/index.ts';
import { AcsValidator } from '../../src/acs/validation/index.ts';

describe('ACS schemas', () => {
  const schemas = loadAcsSchemas();

  it('ships the schema files', () => {
    expect(schemas.size).toBeGreaterThan(20);
  });

  it('every schema is valid against its meta-schema', () => {
    const ajv = new Ajv2020({ strict: false });
    const invalid: string[] = [];
    for (const [path, schema] of schemas) {
      if (!ajv.validateSchema(schema)) invalid.push(`${path}: ${ajv.errorsText(ajv.errors)}`);
    }
    expect(invalid).toEqual([]);
  });

  it('a schema that breaks its meta-schema is reported', () => {
    const ajv = new Ajv2020({ strict: false });
    expect(ajv.validateSchema({ type: 'object', required: 'not-an-array' })).toBe(false);
  });

  it('every schema compiles', () => {
    expect(() => new AcsValidator().compileAll()).not.toThrow();
  });
});
