// JSON Schema validation (ajv, draft 2020-12 + formats). Every schema is compiled once (the live server's validator
// holds them all, issue #3, compiled on first use and then in the background; a replay worker's holds only what
// finalizeDecision checks).
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadAcsSchemas, SCHEMA_BASE, type JsonSchema } from '../schemas/index.ts';

// ajv-formats is CommonJS; under NodeNext its default import is the module object on some toolchains.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => void;

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

/** Paths of the schema files `value` `$ref`s (relative to the schema root), resolved against the file at `from`. */
function referencedFiles(value: unknown, from: string, out: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) referencedFiles(item, from, out);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, member] of Object.entries(value)) {
    if (key === '$ref' && typeof member === 'string') {
      const target = new URL(member, SCHEMA_BASE + from).href.split('#')[0]!;
      if (target.startsWith(SCHEMA_BASE)) out.add(target.slice(SCHEMA_BASE.length));
    } else referencedFiles(member, from, out);
  }
}

/** `only` plus every schema file it references, transitively. */
function withReferences(only: readonly string[], schemas: Map<string, JsonSchema>): Set<string> {
  const needed = new Set<string>();
  const pending = [...only];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    if (needed.has(path)) continue;
    const schema = schemas.get(path);
    if (!schema) throw new Error(`unknown ACS schema ${path}`);
    needed.add(path);
    const refs = new Set<string>();
    referencedFiles(schema, path, refs);
    pending.push(...refs);
  }
  return needed;
}

export interface AcsValidatorOptions {
  /**
   * Compile only these schema paths (and the files they reference); validating any other path throws. For
   * replay workers, which check only decision details: adding and compiling every schema is a long stretch of CPU.
   * Default: every schema, as the live server requires.
   */
  only?: readonly string[];
}

/**
 * The compiled validators the pipeline and the client need. Each schema is compiled the first time it is used
 * (or by `compileAll`): compiling every schema costs a few hundred ms of CPU, which a starting server should not
 * spend before it can answer its first request; it compiles the rest in the background once serving.
 */
export class AcsValidator {
  readonly #ajv: Ajv2020;
  readonly #byPath = new Map<string, ValidateFunction>();
  /** Every path this validator holds, compiled or not yet, with the schema id ajv knows it by. */
  readonly #known = new Map<string, string>();

  constructor(options: AcsValidatorOptions = {}) {
    // strict:false because the upstream schemas use keywords ajv's strict mode flags (e.g. `default` beside $ref).
    // validateSchema:false: the shipped schemas are checked against their meta-schema by test/acs/schemas.test.ts,
    // not again at every start.
    this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true, validateSchema: false });
    addFormats(this.#ajv);
    const all = loadAcsSchemas();
    const schemas = options.only
      ? new Map([...withReferences(options.only, all)].map((path) => [path, all.get(path)!]))
      : all;
    for (const schema of schemas.values()) this.#ajv.addSchema(schema);
    if (options.only) {
      // Referenced files are added (for $ref) but held only if listed; a subset is small, so it compiles at once.
      for (const path of options.only) this.#known.set(path, SCHEMA_BASE + path);
      this.compileAll();
      return;
    }
    for (const path of schemas.keys()) this.#known.set(path, SCHEMA_BASE + path);
    for (const def of ['ClientHello', 'ServerHello'])
      this.#known.set(`handshake.json#${def}`, `${SCHEMA_BASE}handshake.json#/$defs/${def}`);
  }

  #compiled(path: string): ValidateFunction {
    let fn = this.#byPath.get(path);
    if (fn) return fn;
    const id = this.#known.get(path);
    if (!id) throw new Error(`unknown ACS schema ${path}`);
    fn = this.#ajv.getSchema(id);
    if (!fn) throw new Error(`ACS schema ${path} did not compile`);
    this.#byPath.set(path, fn);
    return fn;
  }

  /** Compiles every schema not compiled yet (throws on the first that does not compile). */
  compileAll(): void {
    for (const path of this.#known.keys()) this.#compiled(path);
  }

  /**
   * Compiles the schemas not compiled yet one at a time, yielding to the event loop between them, so requests
   * arriving meanwhile are not held up by more than one schema's compilation.
   */
  async compileInBackground(): Promise<void> {
    for (const path of this.#known.keys()) {
      if (this.#byPath.has(path)) continue;
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.#compiled(path);
    }
  }

  /** Validates against a schema by its path relative to the schema root, e.g. `hooks/user-message.json`. */
  validate(path: string, value: unknown): ValidationResult {
    const fn = this.#compiled(path);
    return fn(value) ? { ok: true } : { ok: false, violation: firstViolation(fn.errors) };
  }

  requestEnvelope(value: unknown): ValidationResult {
    return this.validate('request-envelope.json', value);
  }
  responseEnvelope(value: unknown): ValidationResult {
    return this.validate('response-envelope.json', value);
  }
  clientHello(value: unknown): ValidationResult {
    return this.validate('handshake.json#ClientHello', value);
  }
  serverHello(value: unknown): ValidationResult {
    return this.validate('handshake.json#ServerHello', value);
  }
  /** Whether this validator holds `path` (it is compiled if it was not yet, so a broken schema throws here). */
  has(path: string): boolean {
    if (!this.#known.has(path)) return false;
    this.#compiled(path);
    return true;
  }
}

let shared: AcsValidator | undefined;
/** One process-wide instance: compiling the schemas costs a few hundred milliseconds. */
export function sharedValidator(): AcsValidator {
  shared ??= new AcsValidator();
  return shared;
}

/**
 * Makes `validator` this thread's shared instance, before anything asked for one (a replay worker installs a
 * subset one so the pipeline's config does not compile every schema). Throws once the shared one exists.
 */
export function provideSharedValidator(validator: AcsValidator): void {
  if (shared && shared !== validator) throw new Error('the shared ACS validator is already in use');
  shared = validator;
}
