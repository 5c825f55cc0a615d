// A module from its statements, as OPA's parseModule builds one once the whole file has parsed
// (ast/parser_ext.go): the first statement must be the package, a query statement is read as a rule
// (ParseRuleFromBody), and in a Rego v1 module every rule is checked for the v1 keywords (CheckRegoV1). All the
// errors are collected, in OPA's order; like OPA's (NewError) they carry no source lines.
import { builtinDecls, plannerBuiltinDecls, refusedBuiltinDecls } from '../builtins/declarations.ts';
import { RegoError, RegoErrors } from '../errors.ts';
import { generatedTrue, REGO_KEYWORDS, refString, type RuleSyntax, type Statement } from './parser.ts';
import type { Body, Head, Import, Location, Package, Rule, Term } from './types.ts';

/** OPA refuses a query statement calling a builtin as a rule (BuiltinMap): every builtin it knows. */
const BUILTIN_NAMES: ReadonlySet<string> = new Set([
  ...builtinDecls.keys(),
  ...plannerBuiltinDecls.keys(),
  ...refusedBuiltinDecls.keys(),
]);

export interface ModuleParts {
  package: Package;
  imports: Import[];
  rules: Rule[];
  /** Where each statement that METADATA can annotate starts, with what it defines. */
  targets: { row: number; rules?: Rule[]; pkg?: true }[];
}

const where = (l: Location | undefined, file: string): Location =>
  l
    ? { file: l.file, row: l.row, col: l.col, ...(l.offset !== undefined ? { offset: l.offset } : {}) }
    : { file, row: 1, col: 1 };

function statementLocation(s: Statement): Location | undefined {
  switch (s.kind) {
    case 'package':
      return s.pkg.location;
    case 'import':
      return s.imp.location;
    case 'rules':
      return s.rules[0]?.location;
    case 'body':
      return s.body[0]?.location;
  }
}

/**
 * The module's package, imports and rules from its statements (the first of which may be an annotation block,
 * at `first`, when no statement parsed). Throws every error OPA's parseModule reports.
 */
export function assembleModule(
  file: string,
  statements: readonly Statement[],
  syntax: WeakMap<Rule, RuleSyntax>,
  readAs: 0 | 1,
  first?: Location,
): ModuleParts {
  const errors: RegoError[] = [];
  const fail = (l: Location | undefined, message: string): void => {
    errors.push(new RegoError('rego_parse_error', message, where(l, file)));
  };
  const [head, ...rest] = statements;
  if (head?.kind !== 'package') fail(head ? statementLocation(head) : first, 'package expected');
  const imports: Import[] = [];
  const rules: Rule[] = [];
  const targets: ModuleParts['targets'] = [];
  if (head?.kind === 'package') targets.push({ row: head.pkg.location?.row ?? 1, pkg: true });
  let v1 = readAs === 1;
  // OPA reads the statements after the first: a first statement that is not the package gives only that error.
  for (const s of rest) {
    switch (s.kind) {
      case 'import': {
        imports.push(s.imp);
        const p = s.imp.path.value;
        if (
          p.length === 2 &&
          p[0].type === 'var' &&
          p[0].value === 'rego' &&
          p[1].type === 'string' &&
          p[1].value === 'v1'
        )
          v1 = true;
        break;
      }
      case 'rules':
        rules.push(...s.rules);
        targets.push({ row: s.rules[0].location?.row ?? 1, rules: s.rules });
        break;
      case 'body': {
        const read = ruleFromBody(s.body);
        if ('error' in read) {
          fail(s.body[0].location, read.error);
          break;
        }
        syntax.set(read.rule, read.syntax);
        rules.push(read.rule);
        targets.push({ row: read.rule.location?.row ?? 1, rules: [read.rule] });
        break;
      }
      case 'package':
        fail(s.pkg.location, 'unexpected package');
        break;
    }
  }
  if (v1) {
    for (const rule of rules) {
      for (let r: Rule | undefined = rule; r; r = r.else) {
        for (const message of regoV1Violations(r, syntax.get(r))) fail(r.location, message);
      }
    }
  }
  if (errors.length || head?.kind !== 'package') throw new RegoErrors(errors);
  return { package: head.pkg, imports, rules, targets };
}

/** OPA's checkRegoV1Rule: the keywords Rego v1 asks of a rule's declaration. */
function regoV1Violations(rule: Rule, written: RuleSyntax | undefined): string[] {
  const s = written ?? { if: true, contains: true, generatedBody: false, generatedValue: false };
  const what = rule.head.args?.length ? 'function' : 'rule';
  const out: string[] = [];
  const [name] = rule.head.reference;
  if (rule.head.reference.length < 2 && name.type === 'var' && REGO_KEYWORDS.has(name.value)) {
    out.push(`${name.value} keyword cannot be used for rule name`);
  }
  if (s.generatedBody && s.generatedValue) out.push(`${what} must have value assignment and/or body declaration`);
  if (!s.generatedBody && !s.if && !rule.default) out.push(`\`if\` keyword is required before ${what} body`);
  if (rule.head.kind === 'multi' && !s.contains) out.push('`contains` keyword is required for partial set rules');
  return out;
}

type ReadRule = { rule: Rule; syntax: RuleSyntax } | { error: string };

const isOperator = (op: readonly Term[], name: string): boolean =>
  op.length === 1 && op[0].type === 'var' && op[0].value === name;

/**
 * A query statement read as a rule (OPA's ParseRuleFromBody / ParseRuleFromExpr): `p := v`, `p[k] = v`,
 * `f(x) = y`, a bare call `f(x)`, a bare ref `a.b` (a partial set in v0) or `a.b.c` (true); anything else is
 * the error OPA gives it.
 */
function ruleFromBody(body: Body): ReadRule {
  if (body.length !== 1) return { error: 'multiple expressions cannot be used for rule head' };
  const [expr] = body;
  if (expr.with.length) return { error: 'expressions using with keyword cannot be used for rule head' };
  if (expr.negated) return { error: 'negated expressions cannot be used for rule head' };
  const loc = expr.location as Location;
  const t = expr.terms;
  switch (t.type) {
    case 'somedecl':
    case 'somein':
      return { error: "'some' declarations cannot be used for rule head" };
    case 'every':
      return { error: 'expression cannot be used for rule head' };
    case 'term':
      return ruleFromTerm(t.term, loc);
    case 'call': {
      const op = t.operator.value;
      if (isOperator(op, 'eq') || isOperator(op, 'assign')) {
        if (t.args.length < 2) return { error: 'assignment requires two operands' };
        return ruleFromEquality(t.args[0], t.args[1], isOperator(op, 'assign'), loc);
      }
      if (BUILTIN_NAMES.has(refString(op))) return { error: 'rule name conflicts with built-in function' };
      if (t.args.length === 0) return { error: 'rule argument list must take at least one argument' };
      if (op[0].type !== 'var') return { error: `invalid rule head: ${refString(op)}` };
      const value: Term = { type: 'boolean', value: true, location: loc };
      return made({ reference: op, assign: false, kind: 'single', location: loc, args: t.args, value }, loc);
    }
  }
}

function ruleFromTerm(term: Term, loc: Location): ReadRule {
  if (term.type !== 'ref') return { error: `${term.type} cannot be used for rule name` };
  const ref = term.value;
  if (ref.length > 2) {
    if (ref[0].type !== 'var') return { error: `invalid rule head: ${refString(ref)}` };
    const value: Term = { type: 'boolean', value: true, location: loc };
    return made({ reference: ref, assign: false, kind: 'single', location: loc, value }, loc, true);
  }
  if (ref.length === 1) return { error: 'refs cannot be used for rule head' };
  if (ref[0].type !== 'var') return { error: `invalid rule head: ${refString(ref)}` };
  return made({ reference: [ref[0]], assign: false, kind: 'multi', location: loc, key: ref[1] }, loc);
}

/** `lhs = rhs` / `lhs := rhs` (OPA's parseCompleteRuleFromEq, trying a function, a ref head, then a name). */
function ruleFromEquality(lhs: Term, rhs: Term, assign: boolean, loc: Location): ReadRule {
  let reference: Term[] | undefined;
  let args: Term[] | undefined;
  if (lhs.type === 'call' && lhs.operator.value[0].type === 'var') {
    reference = lhs.operator.value;
    args = lhs.args;
  } else if (lhs.type === 'ref' && lhs.value[0].type === 'var') reference = lhs.value;
  else if (lhs.type === 'var') reference = [lhs];
  else if (lhs.type === 'ref') return { error: `invalid rule head: ${refString(lhs.value)}` };
  else return { error: `${lhs.type} cannot be used for rule name` };
  return made({ reference, assign, kind: 'single', location: loc, ...(args ? { args } : {}), value: rhs }, loc);
}

/** The rule for `head` (its keys in the order the parser's heads have them, so the ASTs compare as JSON too). */
function made(head: Head, loc: Location, generatedValue = false): ReadRule {
  return {
    rule: { default: false, head, body: [generatedTrue(loc)], location: loc },
    syntax: { if: false, contains: false, generatedBody: true, generatedValue },
  };
}
