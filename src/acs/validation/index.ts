// JSON Schema validation (ajv, draft 2020-12 + formats). Every schema is compiled once, at construction.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadAcsSchemas, SCHEMA_BASE } from '../schemas/index.ts';

// ajv-formats is CommonJS; under NodeNext its default import is the module object on some toolchains.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

export interface SchemaViolation {
  /** RFC 6901 pointer to the offending member (a missing member is addressed where it should be). */
  pointer: string;
  message: string;
}

export type ValidationResult = { ok: true } | { ok: false; violation: SchemaViolation };

function firstViolation(errors: ErrorObject[] | null | undefined): SchemaViolation {
  const err = errors?.[0];
  if (!err) return { pointer: '', message: 'value does not match the schema' };
  let pointer = err.instancePath;
  if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty?: string }).missingProperty ?? '';
    pointer += '/' + missing.replace(/~/g, '~0').replace(/\//g, '~1');
  } else if (err.keyword === 'additionalProperties') {
    const extra = (err.params as { additionalProperty?: string }).additionalProperty ?? '';
    pointer += '/' + extra.replace(/~/g, '~0').replace(/\//g, '~1');
  }
  return { pointer, message: `${err.instancePath || '/'} ${err.message ?? 'is invalid'}` };
}

/** The compiled validators the pipeline and the client need. */
export class AcsValidator {
  readonly #ajv: Ajv2020;
  readonly #byPath = new Map<string, ValidateFunction>();

  constructor() {
    // strict:false because the upstream schemas use keywords ajv's strict mode flags (e.g. `default` beside $ref).
    this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats(this.#ajv);
    const schemas = loadAcsSchemas();
    for (const schema of schemas.values()) this.#ajv.addSchema(schema);
    for (const path of schemas.keys()) {
      const fn = this.#ajv.getSchema(SCHEMA_BASE + path);
      if (!fn) throw new Error(`ACS schema ${path} did not compile`);
      this.#byPath.set(path, fn);
    }
    for (const def of ['ClientHello', 'ServerHello']) {
      const fn = this.#ajv.getSchema(`${SCHEMA_BASE}handshake.json#/$defs/${def}`);
      if (!fn) throw new Error(`ACS schema handshake.json#/$defs/${def} did not compile`);
      this.#byPath.set(`handshake.json#${def}`, fn);
    }
  }

  /** Validates against a schema by its path relative to the schema root, e.g. `hooks/user-message.json`. */
  validate(path: string, value: unknown): ValidationResult {
    const fn = this.#byPath.get(path);
    if (!fn) throw new Error(`unknown ACS schema ${path}`);
    return fn(value) ? { ok: true } : { ok: false, violation: firstViolation(fn.errors) };
  }

  requestEnvelope(value: unknown): ValidationResult { return this.validate('request-envelope.json', value); }
  responseEnvelope(value: unknown): ValidationResult { return this.validate('response-envelope.json', value); }
  clientHello(value: unknown): ValidationResult { return this.validate('handshake.json#ClientHello', value); }
  serverHello(value: unknown): ValidationResult { return this.validate('handshake.json#ServerHello', value); }
  has(path: string): boolean { return this.#byPath.has(path); }
}

let shared: AcsValidator | undefined;
/** One process-wide instance: compiling the schemas costs tens of milliseconds. */
export function sharedValidator(): AcsValidator {
  shared ??= new AcsValidator();
  return shared;
}
