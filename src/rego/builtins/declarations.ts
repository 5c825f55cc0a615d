// The builtin table: OPA's names and type declarations (as in OPA's capabilities.json), for every
// builtin the Guardian supports, plus the builtins it refuses (their declarations too) and why.
import {
  anyOf,
  arrayOf,
  fn,
  objectOf,
  objectWith,
  setOf,
  tAny,
  tBool,
  tNull,
  tNum,
  tStr,
  tuple,
  type BuiltinDeclaration,
  type FunctionType,
  type OpaType,
} from './types.ts';
import { CIDR_CONTAINS_MATCHES_HOST } from './host/names.ts';

const anyArray = arrayOf(tAny);
const anySet = setOf(tAny);
const anyObject = objectOf(tAny, tAny);
const strObject = objectOf(tStr, tAny);
const arrayOrSet = anyOf(anyArray, anySet);
const collection = anyOf(anyArray, anyObject, anySet);
const strings = anyOf(arrayOf(tStr), setOf(tStr));
const strOrStrings = anyOf(tStr, arrayOf(tStr), setOf(tStr));
const jsonPaths = anyOf(arrayOf(anyOf(tStr, anyArray)), setOf(anyOf(tStr, anyArray)));
const timeNs = anyOf(tNum, tuple(tNum, tStr));
const graph = objectOf(tAny, anyOf(anyArray, anySet));
const cidrs = anyOf(
  tStr,
  arrayOf(anyOf(tStr, anyArray)),
  objectOf(tStr, anyOf(tStr, anyArray)),
  setOf(anyOf(tStr, anyArray)),
);

const s1 = (result: OpaType): FunctionType => fn([tStr], result);
const s2 = (result: OpaType): FunctionType => fn([tStr, tStr], result);
const n1n = fn([tNum], tNum);
const n2n = fn([tNum, tNum], tNum);
const any2bool = fn([tAny, tAny], tBool);

type Entry = [name: string, decl: FunctionType, extra?: Omit<BuiltinDeclaration, 'name' | 'decl'>];

const entries: Entry[] = [
  // Operators (infix spellings as OPA's capabilities.json gives them).
  ['equal', any2bool, { infix: '==' }],
  ['neq', any2bool, { infix: '!=' }],
  ['lt', any2bool, { infix: '<' }],
  ['lte', any2bool, { infix: '<=' }],
  ['gt', any2bool, { infix: '>' }],
  ['gte', any2bool, { infix: '>=' }],
  ['assign', any2bool, { infix: ':=' }],
  ['eq', any2bool, { infix: '=' }],
  ['plus', n2n, { infix: '+' }],
  ['minus', fn([anyOf(tNum, anySet), anyOf(tNum, anySet)], anyOf(tNum, anySet)), { infix: '-' }],
  ['mul', n2n, { infix: '*' }],
  ['div', n2n, { infix: '/' }],
  ['rem', n2n, { infix: '%' }],
  ['and', fn([anySet, anySet], anySet), { infix: '&' }],
  ['or', fn([anySet, anySet], anySet), { infix: '|' }],
  ['internal.member_2', any2bool, { infix: 'in' }],
  ['internal.member_3', fn([tAny, tAny, tAny], tBool), { infix: 'in' }],

  // Aggregates
  ['count', fn([anyOf(tStr, anyArray, anyObject, anySet)], tNum)],
  ['sum', fn([anyOf(arrayOf(tNum), setOf(tNum))], tNum)],
  ['product', fn([anyOf(arrayOf(tNum), setOf(tNum))], tNum)],
  ['max', fn([arrayOrSet], tAny)],
  ['min', fn([arrayOrSet], tAny)],
  ['sort', fn([arrayOrSet], anyArray)],

  // Numbers
  ['abs', n1n],
  ['ceil', n1n],
  ['floor', n1n],
  ['round', n1n],
  ['numbers.range', fn([tNum, tNum], arrayOf(tNum))],
  ['numbers.range_step', fn([tNum, tNum, tNum], arrayOf(tNum))],
  ['to_number', fn([anyOf(tNull, tBool, tNum, tStr)], tNum)],
  ['format_int', fn([tNum, tNum], tStr)],
  ['bits.or', n2n],
  ['bits.and', n2n],
  ['bits.xor', n2n],
  ['bits.lsh', n2n],
  ['bits.rsh', n2n],
  ['bits.negate', n1n],
  // Deterministic per evaluation here (seeded by the evaluation seed), see host/random.ts.
  ['rand.intn', fn([tStr, tNum], tNum), { nondeterministic: true }],

  // Strings
  ['concat', fn([tStr, strings], tStr)],
  ['contains', s2(tBool)],
  ['startswith', s2(tBool)],
  ['endswith', s2(tBool)],
  ['indexof', s2(tNum)],
  ['indexof_n', s2(arrayOf(tNum))],
  ['lower', s1(tStr)],
  ['upper', s1(tStr)],
  ['replace', fn([tStr, tStr, tStr], tStr)],
  ['strings.replace_n', fn([objectOf(tStr, tStr), tStr], tStr)],
  ['split', s2(arrayOf(tStr))],
  ['strings.split_n', fn([tStr, tStr, tNum], arrayOf(tStr))],
  ['substring', fn([tStr, tNum, tNum], tStr)],
  ['trim', s2(tStr)],
  ['trim_left', s2(tStr)],
  ['trim_right', s2(tStr)],
  ['trim_prefix', s2(tStr)],
  ['trim_suffix', s2(tStr)],
  ['trim_space', s1(tStr)],
  ['strings.reverse', s1(tStr)],
  ['strings.count', s2(tNum)],
  ['strings.any_prefix_match', fn([strOrStrings, strOrStrings], tBool)],
  ['strings.any_suffix_match', fn([strOrStrings, strOrStrings], tBool)],
  ['sprintf', fn([tStr, anyArray], tStr)],

  // Regular expressions (RE2 syntax) and globs
  ['regex.match', s2(tBool)],
  ['regex.is_valid', s1(tBool)],
  ['regex.find_n', fn([tStr, tStr, tNum], arrayOf(tStr))],
  ['regex.find_all_string_submatch_n', fn([tStr, tStr, tNum], arrayOf(arrayOf(tStr)))],
  ['regex.split', s2(arrayOf(tStr))],
  ['regex.replace', fn([tStr, tStr, tStr], tStr)],
  ['regex.template_match', fn([tStr, tStr, tStr, tStr], tBool)],
  ['regex.globs_match', s2(tBool)],
  ['glob.match', fn([tStr, anyOf(tNull, arrayOf(tStr)), tStr], tBool)],
  ['glob.quote_meta', s1(tStr)],

  // Arrays and sets
  ['array.concat', fn([anyArray, anyArray], anyArray)],
  ['array.slice', fn([anyArray, tNum, tNum], anyArray)],
  ['array.reverse', fn([anyArray], anyArray)],
  ['array.flatten', fn([anyArray], anyArray)],
  ['union', fn([setOf(anySet)], anySet)],
  ['intersection', fn([setOf(anySet)], anySet)],

  // Objects and JSON documents
  ['object.get', fn([anyObject, tAny, tAny], tAny)],
  ['object.keys', fn([anyObject], anySet)],
  ['object.remove', fn([anyObject, collection], tAny)],
  ['object.filter', fn([anyObject, collection], tAny)],
  ['object.union', fn([anyObject, anyObject], tAny)],
  ['object.union_n', fn([arrayOf(anyObject)], tAny)],
  ['object.subset', fn([collection, collection], tAny)],
  ['json.filter', fn([anyObject, jsonPaths], tAny)],
  ['json.remove', fn([anyObject, jsonPaths], tAny)],
  ['json.patch', fn([tAny, arrayOf(objectWith({ op: tStr, path: tAny }, { key: tAny, value: tAny }))], tAny)],

  // Types
  ['is_number', fn([tAny], tBool)],
  ['is_string', fn([tAny], tBool)],
  ['is_boolean', fn([tAny], tBool)],
  ['is_array', fn([tAny], tBool)],
  ['is_set', fn([tAny], tBool)],
  ['is_object', fn([tAny], tBool)],
  ['is_null', fn([tAny], tBool)],
  ['type_name', fn([tAny], tStr)],

  // Encodings
  ['base64.encode', s1(tStr)],
  ['base64.decode', s1(tStr)],
  ['base64.is_valid', s1(tBool)],
  ['base64url.encode', s1(tStr)],
  ['base64url.encode_no_pad', s1(tStr)],
  ['base64url.decode', s1(tStr)],
  ['hex.encode', s1(tStr)],
  ['hex.decode', s1(tStr)],
  ['urlquery.encode', s1(tStr)],
  ['urlquery.decode', s1(tStr)],
  ['urlquery.encode_object', fn([objectOf(tStr, strOrStrings)], tStr)],
  ['urlquery.decode_object', s1(objectOf(tStr, arrayOf(tStr)))],
  ['json.marshal', fn([tAny], tStr)],
  [
    'json.marshal_with_options',
    fn([tAny, objectWith({ indent: tStr, prefix: tStr, pretty: tBool }, { key: tStr, value: tAny })], tStr),
  ],
  ['json.unmarshal', s1(tAny)],
  ['json.is_valid', s1(tBool)],
  ['json.verify_schema', fn([anyOf(tStr, anyObject)], tuple(tBool, anyOf(tNull, tStr)))],
  [
    'json.match_schema',
    fn(
      [anyOf(tStr, anyObject), anyOf(tStr, anyObject)],
      tuple(tBool, arrayOf(objectWith({ desc: tStr, error: tStr, field: tStr, type: tStr }))),
    ),
  ],
  ['yaml.marshal', fn([tAny], tStr)],
  ['yaml.unmarshal', s1(tAny)],
  ['yaml.is_valid', s1(tBool)],

  // Time (nanoseconds since the Unix epoch, UTC unless a location is given)
  ['time.now_ns', fn(undefined, tNum), { nondeterministic: true }],
  ['time.parse_ns', s2(tNum)],
  ['time.parse_rfc3339_ns', s1(tNum)],
  ['time.parse_duration_ns', s1(tNum)],
  ['time.date', fn([timeNs], tuple(tNum, tNum, tNum))],
  ['time.clock', fn([timeNs], tuple(tNum, tNum, tNum))],
  ['time.weekday', fn([timeNs], tStr)],
  ['time.add_date', fn([tNum, tNum, tNum, tNum], tNum)],
  ['time.diff', fn([timeNs, timeNs], tuple(tNum, tNum, tNum, tNum, tNum, tNum))],
  ['time.format', fn([anyOf(tNum, tuple(tNum, tStr), tuple(tNum, tStr, tStr))], tStr)],

  // Crypto
  ['crypto.sha256', s1(tStr)],
  ['crypto.sha1', s1(tStr)],
  ['crypto.md5', s1(tStr)],
  ['crypto.hmac.sha256', s2(tStr)],
  ['crypto.hmac.sha512', s2(tStr)],
  ['crypto.hmac.sha1', s2(tStr)],
  ['crypto.hmac.md5', s2(tStr)],
  ['crypto.hmac.equal', s2(tBool)],
  ['crypto.x509.parse_certificates', s1(arrayOf(strObject))],

  // Networks
  ['net.cidr_contains', s2(tBool)],
  ['net.cidr_intersects', s2(tBool)],
  ['net.cidr_is_valid', s1(tBool)],
  ['net.cidr_merge', fn([anyOf(arrayOf(anyOf(tStr)), setOf(tStr))], setOf(tStr))],
  ['net.cidr_expand', s1(setOf(tStr))],
  // The planner lowers its calls to CIDR_CONTAINS_MATCHES_HOST (declared below), as JSON loses sets and keys.
  ['net.cidr_contains_matches', fn([cidrs, cidrs], setOf(tuple(tAny, tAny)))],

  // Versions, identifiers, units
  ['semver.compare', s2(tNum)],
  ['semver.is_valid', fn([tAny], tBool)],
  ['uuid.parse', s1(strObject)],
  // Deterministic per evaluation here (seeded by the evaluation seed), see host/random.ts.
  ['uuid.rfc4122', s1(tStr), { nondeterministic: true }],
  ['units.parse', s1(tNum)],
  ['units.parse_bytes', s1(tNum)],

  // Graphs and documents
  ['graph.reachable', fn([graph, arrayOrSet], anySet)],
  ['graph.reachable_paths', fn([graph, arrayOrSet], setOf(anyArray))],
  ['walk', fn([tAny], tuple(anyArray, tAny)), { relation: true }],

  // JWT (verification only: signing keys do not belong in policies)
  ['io.jwt.decode', s1(tuple(anyObject, anyObject, tStr))],
  ['io.jwt.decode_verify', fn([tStr, strObject], tuple(tBool, anyObject, anyObject)), { nondeterministic: true }],
  ...['hs256', 'hs384', 'hs512', 'rs256', 'rs384', 'rs512', 'ps256', 'ps384', 'ps512', 'es256', 'es384', 'es512'].map(
    (alg): Entry => [`io.jwt.verify_${alg}`, s2(tBool)],
  ),

  // Deprecated in OPA, callable from Rego v0 modules only (semantic/checks.ts refuses them in v1).
  ['all', fn([arrayOrSet], tBool), { deprecated: true }],
  ['any', fn([arrayOrSet], tBool), { deprecated: true }],
  ['re_match', s2(tBool), { deprecated: true }],
  ['set_diff', fn([anySet, anySet], anySet), { deprecated: true }],
  ['net.cidr_overlap', s2(tBool), { deprecated: true }],
  ['cast_array', fn([tAny], anyArray), { deprecated: true }],
  ['cast_set', fn([tAny], anySet), { deprecated: true }],
  ['cast_string', fn([tAny], tStr), { deprecated: true }],
  ['cast_boolean', fn([tAny], tBool), { deprecated: true }],
  ['cast_null', fn([tAny], tNull), { deprecated: true }],
  ['cast_object', fn([tAny], anyObject), { deprecated: true }],

  // Debugging
  ['print', { type: 'function', variadic: tAny }],
  ['internal.print', fn([arrayOf(anySet)])],
  // What a template string compiles to (semantic/template-strings.ts); OPA lists it in its capabilities too.
  ['internal.template_string', fn([anyArray], tStr)],
  ['trace', s1(tBool)],
];

function buildTable(): ReadonlyMap<string, BuiltinDeclaration> {
  const table = new Map<string, BuiltinDeclaration>();
  for (const [name, decl, extra] of entries) {
    if (table.has(name)) throw new Error(`duplicate builtin declaration ${name}`);
    table.set(name, { name, decl, ...extra });
  }
  return table;
}

/** Every builtin the Guardian's Rego toolchain supports, keyed by OPA name (`array.concat`, `plus`, …). */
export const builtinDecls: ReadonlyMap<string, BuiltinDeclaration> = buildTable();

/**
 * Host builtins only the planner calls, lowering an OPA builtin whose operands do not survive opa-wasm's JSON
 * hand-over: no policy can call them and capabilities documents do not list them (their OPA builtin stands
 * for them there). `internal.cidr_contains_matches(a, pairs(a), b, pairs(b))` takes each operand of
 * net.cidr_contains_matches with its `[key, value]` pairs, as `some k, v in x` walks it (planner.ts).
 */
export const plannerBuiltinDecls: ReadonlyMap<string, BuiltinDeclaration> = new Map([
  [
    CIDR_CONTAINS_MATCHES_HOST,
    {
      name: CIDR_CONTAINS_MATCHES_HOST,
      decl: fn([tAny, arrayOf(tuple(tAny, tAny)), tAny, arrayOf(tuple(tAny, tAny))], setOf(tuple(tAny, tAny))),
    },
  ],
]);

type RefusedEntry = [name: string, decl: FunctionType, reason: string, extra?: { nondeterministic?: boolean }];

const REPLAYABLE = 'decisions must be replayable from the audit log';
const SIGNING = 'signing keys do not belong in policies (only JWT verification is supported)';
const PRIVATE_KEYS = 'private keys do not belong in policies';
const GRAPHQL = 'GraphQL builtins are not supported by the Guardian';
const CHAINS = 'certificate chain verification depends on the wall clock and host trust store';
const graphqlDoc = anyOf(tStr, anyObject);
const certificateChain = tuple(tBool, arrayOf(strObject));

/**
 * OPA builtins the Guardian refuses, with OPA's declarations (capabilities.json) and the reason shown when one is
 * called. A policy decides an agent's step and must be replayable from the audit log: no network I/O, no host
 * introspection, no secret material in policies. `guardian policy build` and the toolchain's defaults refuse a
 * call at compile time; the authoring tools compile it to a host call that fails when reached (refused.ts).
 */
const refusedEntries: RefusedEntry[] = [
  [
    'http.send',
    fn([strObject], anyObject),
    `network I/O during policy evaluation is not allowed: ${REPLAYABLE}`,
    { nondeterministic: true },
  ],
  [
    'net.lookup_ip_addr',
    s1(setOf(tStr)),
    `DNS lookups during policy evaluation are not allowed: ${REPLAYABLE}`,
    { nondeterministic: true },
  ],
  [
    'opa.runtime',
    fn(undefined, strObject),
    'the Guardian does not expose host runtime information to policies',
    { nondeterministic: true },
  ],
  [
    'providers.aws.sign_req',
    fn([strObject, strObject, tNum], anyObject),
    'request signing needs cloud credentials, which policies must not hold',
  ],
  ['io.jwt.encode_sign', fn([strObject, strObject, strObject], tStr), SIGNING, { nondeterministic: true }],
  ['io.jwt.encode_sign_raw', fn([tStr, tStr, tStr], tStr), SIGNING, { nondeterministic: true }],
  ['crypto.x509.parse_rsa_private_key', s1(strObject), PRIVATE_KEYS],
  ['crypto.parse_private_keys', s1(arrayOf(strObject)), PRIVATE_KEYS],
  ['crypto.x509.parse_keypair', s2(strObject), PRIVATE_KEYS],
  ['rego.parse_module', s2(strObject), 'parsing Rego at evaluation time is not supported by the Wasm target'],
  [
    'strings.render_template',
    fn([tStr, strObject], tStr),
    'Go text/template rendering is not supported by the Guardian',
  ],
  ['graphql.is_valid', fn([graphqlDoc, graphqlDoc], tBool), GRAPHQL],
  ['graphql.parse', fn([graphqlDoc, graphqlDoc], tuple(anyObject, anyObject)), GRAPHQL],
  ['graphql.parse_and_verify', fn([graphqlDoc, graphqlDoc], tuple(tBool, anyObject, anyObject)), GRAPHQL],
  ['graphql.parse_query', s1(anyObject), GRAPHQL],
  ['graphql.parse_schema', s1(anyObject), GRAPHQL],
  ['graphql.schema_is_valid', fn([graphqlDoc], tBool), GRAPHQL],
  ['crypto.x509.parse_and_verify_certificates', s1(certificateChain), CHAINS],
  ['crypto.x509.parse_and_verify_certificates_with_options', fn([tStr, strObject], certificateChain), CHAINS],
  ['crypto.x509.parse_certificate_request', s1(strObject), 'certificate requests are not supported by the Guardian'],
  ['internal.test_case', fn([anyArray]), 'internal to OPA test tooling'],
];

/** The refused builtins' OPA declarations, keyed by name (what the authoring tools compile their calls against). */
export const refusedBuiltinDecls: ReadonlyMap<string, BuiltinDeclaration> = new Map(
  refusedEntries.map(([name, decl, , extra]) => [name, { name, decl, ...extra }]),
);

/** The builtins we refuse, with the reason shown in the compile error (and in the authoring tools' evaluation error). */
export const refusedBuiltins: ReadonlyMap<string, string> = new Map(
  refusedEntries.map(([name, , reason]) => [name, reason]),
);

/**
 * OPA's argument counts of the refused builtins, so a call written with an output argument (`http.send(req,
 * resp)`) is read as OPA reads it and fails with the refusal, not as an unsafe variable.
 */
export const refusedBuiltinArity: ReadonlyMap<string, number> = new Map(
  refusedEntries.map(([name, decl]) => [name, decl.args?.length ?? 0]),
);
