// OPA's type JSON (the shape of `capabilities.json` and plan `static.builtin_funcs[].decl`).
// Constructors emit keys in alphabetical order, as OPA's Go encoder does, so our plans and
// capabilities documents serialise byte-for-byte like OPA's.

export type OpaType =
  | { type: 'any'; of?: OpaType[] }
  | { type: 'null' }
  | { type: 'boolean' }
  | { type: 'number' }
  | { type: 'string' }
  | { dynamic?: OpaType; static?: OpaType[]; type: 'array' }
  | { of: OpaType; type: 'set' }
  | { dynamic?: { key: OpaType; value: OpaType }; static?: { key: string; value: OpaType }[]; type: 'object' };

/** A builtin's signature. `result` absent = void (e.g. `print`); `variadic` = any number of trailing args. */
export interface FunctionType {
  args?: OpaType[];
  result?: OpaType;
  type: 'function';
  variadic?: OpaType;
}

export interface BuiltinDeclaration {
  name: string;
  decl: FunctionType;
  /** Operator spelling for infix builtins (`plus` → `+`). */
  infix?: string;
  /** Relation builtins (walk) bind their output by iteration: `walk(x, [path, value])`. */
  relation?: boolean;
  /** Result may differ between evaluations of the same input (time, rand, uuid). */
  nondeterministic?: boolean;
  /** Deprecated in OPA: callable from Rego v0 modules only. */
  deprecated?: boolean;
}

export const tAny: OpaType = { type: 'any' };
export const tNull: OpaType = { type: 'null' };
export const tBool: OpaType = { type: 'boolean' };
export const tNum: OpaType = { type: 'number' };
export const tStr: OpaType = { type: 'string' };

/** Union of types: OPA writes it as `{"of":[…],"type":"any"}`. */
export const anyOf = (...of: OpaType[]): OpaType => ({ of, type: 'any' });
/** Array whose elements all have type `t`. */
export const arrayOf = (t: OpaType): OpaType => ({ dynamic: t, type: 'array' });
/** Fixed-length array (tuple). */
export const tuple = (...ts: OpaType[]): OpaType => ({ static: ts, type: 'array' });
export const setOf = (t: OpaType): OpaType => ({ of: t, type: 'set' });
/** Object with arbitrary keys of type `k` and values of type `v`. */
export const objectOf = (k: OpaType, v: OpaType): OpaType => ({ dynamic: { key: k, value: v }, type: 'object' });
/** Object with known keys plus, optionally, dynamic ones. */
export const objectWith = (fields: Record<string, OpaType>, dynamic?: { key: OpaType; value: OpaType }): OpaType => {
  const stat = Object.keys(fields)
    .sort()
    .map((key) => ({ key, value: fields[key] }));
  return dynamic ? { dynamic, static: stat, type: 'object' } : { static: stat, type: 'object' };
};

export const fn = (args: OpaType[] | undefined, result?: OpaType): FunctionType => {
  const out = {} as FunctionType;
  if (args) out.args = args;
  if (result) out.result = result;
  out.type = 'function';
  return out;
};
