// OPA's intermediate representation ("plan"), in exactly the JSON shape `opa build -t plan` writes
// (OPA docs: IR; docs/wasm-abi.md). Keeping OPA's format means the Wasm backend links a real OPA plan the same way
// it links ours. Contract between planner/ (producer) and wasm/ (consumer).

export interface Policy {
  static?: Static;
  plans?: Plans;
  funcs?: Funcs;
}

export interface Static {
  strings?: StringConst[];
  builtin_funcs?: BuiltinFunc[];
  files?: StringConst[];
}

export interface StringConst {
  value: string;
}

/** `decl` is OPA's type JSON; `decl.result` absent means a void builtin (e.g. `print`). */
export interface BuiltinFunc {
  name: string;
  decl: BuiltinDecl;
}

export interface BuiltinDecl {
  type: 'function';
  args?: unknown[];
  result?: unknown;
  variadic?: unknown;
}

export interface Plans {
  plans: Plan[];
}

/** One plan per entrypoint; `name` is the entrypoint path, e.g. `acs/decision`. */
export interface Plan {
  name: string;
  blocks: Block[];
}

export interface Funcs {
  funcs: Func[];
}

/** `params[0]` is input, `params[1]` is data, further params are function arguments. */
export interface Func {
  name: string;
  params: Local[];
  return: Local;
  blocks: Block[];
  path?: string[];
}

export interface Block {
  stmts: Stmt[];
}

export type Local = number;

export type Operand =
  | { type: 'local'; value: Local }
  | { type: 'bool'; value: boolean }
  | { type: 'string_index'; value: number };

/** Source position carried by every statement (`file` indexes `static.files`). */
export interface StmtLocation {
  file?: number;
  row?: number;
  col?: number;
  end_row?: number;
  end_col?: number;
}

type S<T extends string, F> = { type: T; stmt: F & StmtLocation };

export type Stmt =
  | S<'ReturnLocalStmt', { source: Local }>
  | S<'CallStmt', { func: string; args: Operand[] | null; result: Local }>
  | S<'CallDynamicStmt', { args: Local[]; path: Operand[]; result: Local }>
  | S<'BlockStmt', { blocks: Block[] | null }>
  | S<'BreakStmt', { index: number }>
  | S<'DotStmt', { source: Operand; key: Operand; target: Local }>
  | S<'LenStmt', { source: Operand; target: Local }>
  | S<'ScanStmt', { source: Local; key: Local; value: Local; block: Block }>
  | S<'NotStmt', { block: Block }>
  | S<'AssignIntStmt', { value: number; target: Local }>
  | S<'AssignVarStmt', { source: Operand; target: Local }>
  | S<'AssignVarOnceStmt', { source: Operand; target: Local }>
  | S<'ResetLocalStmt', { target: Local }>
  | S<'MakeNullStmt', { target: Local }>
  | S<'MakeNumberIntStmt', { value: number; target: Local }>
  // Older OPA serialises the index field as "Index"; read either.
  | S<'MakeNumberRefStmt', { index?: number; Index?: number; target: Local }>
  | S<'MakeArrayStmt', { capacity: number; target: Local }>
  | S<'MakeObjectStmt', { target: Local }>
  | S<'MakeSetStmt', { target: Local }>
  | S<'EqualStmt', { a: Operand; b: Operand }>
  | S<'NotEqualStmt', { a: Operand; b: Operand }>
  | S<'IsArrayStmt', { source: Operand }>
  | S<'IsObjectStmt', { source: Operand }>
  | S<'IsSetStmt', { source: Operand }>
  | S<'IsDefinedStmt', { source: Local }>
  | S<'IsUndefinedStmt', { source: Local }>
  | S<'ArrayAppendStmt', { array: Local; value: Operand }>
  | S<'ObjectInsertStmt', { key: Operand; value: Operand; object: Local }>
  | S<'ObjectInsertOnceStmt', { key: Operand; value: Operand; object: Local }>
  | S<'ObjectMergeStmt', { a: Local; b: Local; target: Local }>
  | S<'SetAddStmt', { value: Operand; set: Local }>
  | S<'WithStmt', { local: Local; path: number[] | null; value: Operand; block: Block }>
  | S<'NopStmt', Record<string, never>>
  | S<'ResultSetAddStmt', { value: Local }>;

export type StmtType = Stmt['type'];
