// json.verify_schema and json.match_schema on ajv (OPA: topdown/jsonschema.go on gojsonschema). The
// draft follows the schema's `$schema` (Draft 4, 6, 7, 2019-09, 2020-12; Draft 7 when absent); remote
// and file `$ref`s are never fetched. match_schema's error objects carry gojsonschema's fields and
// wording: `{error, type, field, desc}` with `field` a dotted path (`(Root)` for the document, as OPA's gojsonschema copy names it),
// `type` gojsonschema's error type and `error` = `field: desc`. Formats are gojsonschema's seventeen
// (jsonschema-formats.ts); ajv's own format set is not used, so a format OPA does not check passes.
import AjvDraft04Module from 'ajv-draft-04';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft06MetaSchema from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import { FORMAT_CHECKERS } from './jsonschema-formats.ts';
import type { HostImpls } from './registry.ts';
import { BuiltinError, type JsonValue } from './values.ts';

// CommonJS packages: under NodeNext the default import may be the module object.
const AjvDraft04 = ((AjvDraft04Module as unknown as { default?: unknown }).default ?? AjvDraft04Module) as typeof Ajv;

type Draft = '04' | '06' | '07' | '2019-09' | '2020-12';

function draftOf(schema: unknown): Draft {
  const id = schema && typeof schema === 'object' ? (schema as { $schema?: unknown }).$schema : undefined;
  if (typeof id !== 'string') return '07';
  if (id.includes('draft-04')) return '04';
  if (id.includes('draft-06')) return '06';
  if (id.includes('2019-09')) return '2019-09';
  if (id.includes('2020-12')) return '2020-12';
  return '07';
}

const validators = new Map<Draft, Ajv>();

function ajvFor(draft: Draft): Ajv {
  let ajv = validators.get(draft);
  if (ajv) return ajv;
  // gojsonschema ignores unknown keywords and reports every error: strict off, allErrors on. OPA writes
  // nothing while compiling a schema; ajv would warn on the console about formats it does not know.
  const options = {
    strict: false,
    allErrors: true,
    validateSchema: true,
    loadSchema: undefined,
    logger: false as const,
  };
  if (draft === '04') ajv = new AjvDraft04(options);
  else if (draft === '2019-09') ajv = new Ajv2019(options) as unknown as Ajv;
  else if (draft === '2020-12') ajv = new Ajv2020(options) as unknown as Ajv;
  else {
    ajv = new Ajv(options);
    if (draft === '06') ajv.addMetaSchema(draft06MetaSchema);
  }
  for (const [name, validate] of Object.entries(FORMAT_CHECKERS)) ajv.addFormat(name, { type: 'string', validate });
  validators.set(draft, ajv);
  return ajv;
}

/** Schemas compiled per evaluation process, by their JSON text (OPA caches by schema value too). */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 256;

/** A string operand is JSON text; an object or array is the value itself (OPA's astValueToJSONSchemaLoader). */
function loadOperand(v: unknown): unknown {
  if (typeof v === 'string') {
    try {
      return JSON.parse(v);
    } catch {
      throw new BuiltinError('invalid JSON string');
    }
  }
  if (v !== null && typeof v === 'object') return v;
  throw new BuiltinError('wrong type, expected string or object');
}

function compileSchema(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (fn) return fn;
  const ajv = ajvFor(draftOf(schema));
  // Compiled from a copy that is then dropped from ajv's registry, so schemas sharing an `$id` (or one
  // recompiled after eviction) never collide there.
  const copy = (typeof schema === 'object' && schema !== null ? structuredClone(schema) : schema) as object;
  fn = ajv.compile(copy);
  ajv.removeSchema(copy);
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value as string);
  compiled.set(key, fn);
  return fn;
}

function fieldOf(pointer: string): string {
  if (pointer === '') return '(Root)';
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/** gojsonschema's type names: integers are `integer`. */
function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function valueAt(doc: unknown, pointer: string): unknown {
  let v = doc;
  if (pointer === '') return v;
  for (const seg of pointer.slice(1).split('/')) {
    const k = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  }
  return v;
}

interface SchemaError {
  error: string;
  type: string;
  field: string;
  desc: string;
}

const comparisons: Record<string, [type: string, word: string]> = {
  '>=': ['number_gte', 'Must be greater than or equal to'],
  '>': ['number_gt', 'Must be greater than'],
  '<=': ['number_lte', 'Must be less than or equal to'],
  '<': ['number_lt', 'Must be less than'],
};

/** One ajv error in gojsonschema's terms (locales.go DefaultLocale wording, errors.go type names). */
function toOpaError(e: ErrorObject, doc: unknown): SchemaError | undefined {
  const p = e.params as Record<string, unknown>;
  let field = fieldOf(e.instancePath);
  let type: string = e.keyword;
  let desc = e.message ?? 'invalid';
  switch (e.keyword) {
    case 'required':
      type = 'required';
      desc = `${String(p.missingProperty)} is required`;
      break;
    case 'type': {
      type = 'invalid_type';
      const want = Array.isArray(p.type) ? `[${(p.type as string[]).join(',')}]` : String(p.type);
      desc = `Invalid type. Expected: ${want}, given: ${jsonTypeName(valueAt(doc, e.instancePath))}`;
      break;
    }
    case 'enum':
      type = 'enum';
      desc = `${field} must be one of the following: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      break;
    case 'const':
      type = 'const';
      desc = `${field} does not match: ${JSON.stringify(p.allowedValue)}`;
      break;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const [t, word] = comparisons[String(p.comparison)] ?? ['number_gte', 'Must be greater than or equal to'];
      type = t;
      desc = `${word} ${String(p.limit)}`;
      break;
    }
    case 'minLength':
      type = 'string_gte';
      desc = `String length must be greater than or equal to ${String(p.limit)}`;
      break;
    case 'maxLength':
      type = 'string_lte';
      desc = `String length must be less than or equal to ${String(p.limit)}`;
      break;
    case 'pattern':
      type = 'pattern';
      desc = `Does not match pattern '${String(p.pattern)}'`;
      break;
    case 'format':
      type = 'format';
      desc = `Does not match format '${String(p.format)}'`;
      break;
    case 'minItems':
      type = 'array_min_items';
      desc = `Array must have at least ${String(p.limit)} items`;
      break;
    case 'maxItems':
      type = 'array_max_items';
      desc = `Array must have at most ${String(p.limit)} items`;
      break;
    case 'uniqueItems': {
      type = 'unique';
      const [i, j] = [Number(p.j), Number(p.i)].sort((a, b) => a - b);
      desc = `array items[${i},${j}] must be unique`;
      break;
    }
    case 'minProperties':
      type = 'array_min_properties';
      desc = `Must have at least ${String(p.limit)} properties`;
      break;
    case 'maxProperties':
      type = 'array_max_properties';
      desc = `Must have at most ${String(p.limit)} properties`;
      break;
    case 'additionalProperties':
    case 'unevaluatedProperties':
      type = 'additional_property_not_allowed';
      desc = `Additional property ${String(p.additionalProperty ?? p.unevaluatedProperty)} is not allowed`;
      break;
    case 'additionalItems':
    case 'unevaluatedItems':
      type = 'array_no_additional_items';
      desc = 'No additional items allowed on array';
      break;
    case 'multipleOf':
      type = 'multiple_of';
      desc = `Must be a multiple of ${String(p.multipleOf)}`;
      break;
    case 'anyOf':
      type = 'number_any_of';
      desc = 'Must validate at least one schema (anyOf)';
      break;
    case 'oneOf':
      type = 'number_one_of';
      desc = 'Must validate one and only one schema (oneOf)';
      break;
    case 'not':
      type = 'number_not';
      desc = 'Must not validate the schema (not)';
      break;
    case 'if':
      type = p.failingKeyword === 'else' ? 'condition_else' : 'condition_then';
      desc =
        p.failingKeyword === 'else'
          ? 'Must validate "else" as "if" was not valid'
          : 'Must validate "then" as "if" was valid';
      break;
    case 'false schema':
      type = 'false';
      desc = 'False always fails validation';
      break;
    case 'dependencies':
    case 'dependentRequired':
      type = 'missing_dependency';
      desc = `Has a dependency on ${String(p.missingProperty)}`;
      break;
    case 'contains':
      type = 'contains';
      desc = 'At least one of the items must match';
      break;
    case 'propertyNames':
      type = 'invalid_property_name';
      desc = `Property name of "${String(p.propertyName)}" does not match`;
      field = fieldOf(e.instancePath);
      break;
    default:
      break;
  }
  return { error: `${field}: ${desc}`, type, field, desc };
}

/** The branch index of `e` below combinator `c` (`<c.schemaPath>/<i>/…`), else undefined. */
function branchOf(c: ErrorObject, e: ErrorObject): number | undefined {
  if (e === c || !e.schemaPath.startsWith(`${c.schemaPath}/`)) return undefined;
  // The same combinator is evaluated once per element of an enclosing array (one schema path, several
  // instances): a branch error belongs to the combinator error of the instance it was found in or under.
  if (e.instancePath !== c.instancePath && !e.instancePath.startsWith(`${c.instancePath}/`)) return undefined;
  return Number(e.schemaPath.slice(c.schemaPath.length + 1).split('/')[0]);
}

/**
 * ajv's errors in the shape gojsonschema (OPA's validator, internal/gojsonschema validation.go) reports:
 * a failing anyOf, or a oneOf no branch of which passed, is reported first and followed by the errors of
 * its closest branch only (gojsonschema: the highest score; here the branch that got past its `type`
 * with the fewest errors, the first on a tie); a oneOf that several branches passed reports itself alone.
 * ajv reports every branch's errors, then the combinator.
 */
function asGojsonschemaErrors(all: readonly ErrorObject[]): ErrorObject[] {
  const dropped = new Set<ErrorObject>();
  const combinators = all.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  for (const c of combinators) {
    const branches = new Map<number, ErrorObject[]>();
    for (const e of all) {
      const i = branchOf(c, e);
      if (i === undefined) continue;
      const list = branches.get(i);
      if (list) list.push(e);
      else branches.set(i, [e]);
    }
    const passed = (c.params as { passingSchemas?: unknown }).passingSchemas;
    let best: number | undefined;
    if (c.keyword === 'anyOf' || passed === null || passed === undefined) {
      // A branch failing its own root `type` stops there in gojsonschema: it scores lowest.
      const rank = (i: number): [number, number] => {
        const list = branches.get(i) ?? [];
        const rootType = list.some((e) => e.keyword === 'type' && e.schemaPath === `${c.schemaPath}/${i}/type`);
        return [rootType ? 1 : 0, list.length];
      };
      for (const i of [...branches.keys()].sort((a, b) => a - b)) {
        if (best === undefined) best = i;
        else {
          const [ta, na] = rank(i);
          const [tb, nb] = rank(best);
          if (ta < tb || (ta === tb && na < nb)) best = i;
        }
      }
    }
    for (const [i, list] of branches) if (i !== best) for (const e of list) dropped.add(e);
  }
  const out: ErrorObject[] = [];
  const emitted = new Set<ErrorObject>();
  for (const e of all) {
    if (dropped.has(e) || emitted.has(e)) continue;
    // The combinators this error is a branch error of come first, outermost first.
    for (const c of combinators)
      if (!dropped.has(c) && !emitted.has(c) && branchOf(c, e) !== undefined) {
        out.push(c);
        emitted.add(c);
      }
    out.push(e);
    emitted.add(e);
  }
  return out;
}

function schemaErrorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export const jsonSchemaBuiltins: HostImpls = {
  'json.verify_schema'([schema]) {
    let value: unknown;
    try {
      value = loadOperand(schema);
    } catch (e) {
      return [false, `jsonschema: ${schemaErrorText(e)}`];
    }
    try {
      compileSchema(value);
    } catch (e) {
      return [false, `jsonschema: ${schemaErrorText(e)}`];
    }
    return [true, null];
  },
  'json.match_schema'([document, schema]) {
    const doc = loadOperand(document);
    const value = loadOperand(schema);
    let validate: ValidateFunction;
    try {
      validate = compileSchema(value);
    } catch (e) {
      throw new BuiltinError(schemaErrorText(e));
    }
    const valid = validate(doc) as boolean;
    const errors: JsonValue[] = [];
    for (const e of asGojsonschemaErrors(validate.errors ?? [])) {
      const o = toOpaError(e, doc);
      if (o) errors.push({ ...o });
    }
    return [valid, errors];
  },
};
