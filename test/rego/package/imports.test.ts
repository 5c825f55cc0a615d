// `acs-guardian/rego` stands alone: every import under src/rego (static, type-only, `import()`, and
// `import(new URL(…, import.meta.url))`) resolves inside src/rego or names a package. And what the browser
// entry reaches names no Node built-in, so a bundler targeting the browser needs no shims for our code.
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REGO = fileURLToPath(new URL('../../../src/rego/', import.meta.url));
// AssemblyScript sources of the Wasm runtime: compiled by asc, never loaded by Node or a bundler.
const ASSEMBLY = join(REGO, 'wasm', 'runtime', 'assembly');

interface ImportSite {
  file: string;
  line: number;
  specifier: string;
  /** Absolute path for relative specifiers; undefined for packages. */
  resolved?: string;
  /** A dynamic import whose target is not a literal the scan can follow. */
  opaque?: boolean;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (p !== ASSEMBLY) out.push(...sourceFiles(p));
    } else if (/\.(ts|mts|js|mjs)$/.test(entry.name)) out.push(p);
  }
  return out.sort();
}

function literalText(node: ts.Node): string | undefined {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) ? node.text : undefined;
}

/** `new URL('./x', import.meta.url)` or its `.href`: the module path it names, else undefined. */
function importMetaUrlTarget(node: ts.Node): string | undefined {
  const expr = ts.isPropertyAccessExpression(node) && node.name.text === 'href' ? node.expression : node;
  if (!ts.isNewExpression(expr) || expr.expression.getText() !== 'URL' || expr.arguments?.length !== 2)
    return undefined;
  return expr.arguments[1].getText() === 'import.meta.url' ? literalText(expr.arguments[0]) : undefined;
}

function importSites(file: string, text = readFileSync(file, 'utf8')): ImportSite[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const sites: ImportSite[] = [];
  const add = (node: ts.Node, specifier: string, opaque = false): void => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    const relativeSpecifier = specifier.startsWith('.') || specifier.startsWith('/');
    sites.push({
      file,
      line,
      specifier,
      ...(relativeSpecifier ? { resolved: resolve(dirname(file), specifier) } : {}),
      ...(opaque ? { opaque } : {}),
    });
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      const spec = literalText(node.moduleSpecifier);
      if (spec !== undefined) add(node, spec);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const spec = literalText(node.moduleReference.expression);
      if (spec !== undefined) add(node, spec);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const spec = literalText(node.argument.literal);
      if (spec !== undefined) add(node, spec);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      const spec = arg && (literalText(arg) ?? importMetaUrlTarget(arg));
      add(node, spec ?? arg?.getText() ?? '', spec === undefined);
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
      const arg = node.arguments[0];
      const spec = arg && literalText(arg);
      add(node, spec ?? arg?.getText() ?? '', spec === undefined);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

const where = (s: ImportSite): string => `${relative(REGO, s.file)}:${s.line} ${s.specifier}`;
const files = sourceFiles(REGO);
const sites = files.flatMap((f) => importSites(f));

describe('src/rego imports nothing outside src/rego', () => {
  it('scans the whole tree, dynamic imports included', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(sites.some((s) => s.specifier === '@open-policy-agent/opa-wasm')).toBe(true);
    // The runtime loader's `import(new URL('./runtime/build.mjs', import.meta.url).href)` is followed.
    expect(sites.some((s) => s.resolved?.endsWith(join('runtime', 'build.mjs')))).toBe(true);
  });

  it('every relative import stays inside src/rego and every dynamic import is a literal', () => {
    const outside = sites.filter((s) => s.resolved !== undefined && !s.resolved.startsWith(REGO));
    const opaque = sites.filter((s) => s.opaque);
    expect(outside.map(where)).toEqual([]);
    expect(opaque.map(where)).toEqual([]);
  });

  it('the scan would catch an import that leaves src/rego', () => {
    const probe = join(REGO, 'tester', 'probe.ts');
    const code = [
      `import { x } from '../../policy/engine.ts';`,
      `export type { Json } from '../../store/types.ts';`,
      `const m = await import('../../cli/exit-codes.ts');`,
      `const n = await import(new URL('../../cli/main.ts', import.meta.url).href);`,
      `const o = await import(someVariable);`,
      `import { y } from './runner.ts';`,
    ].join('\n');
    const probed = importSites(probe, code);
    expect(probed.filter((s) => s.resolved !== undefined && !s.resolved.startsWith(REGO)).map((s) => s.line)).toEqual([
      1, 2, 3, 4,
    ]);
    expect(probed.filter((s) => s.opaque).map((s) => s.line)).toEqual([5]);
  });
});

describe('the browser entry reaches no Node built-in', () => {
  const nodeBuiltins = new Set(builtinModules);
  const isNodeBuiltin = (spec: string): boolean => spec.startsWith('node:') || nodeBuiltins.has(spec.split('/')[0]);
  const byFile = new Map<string, ImportSite[]>();
  for (const s of sites) byFile.set(s.file, [...(byFile.get(s.file) ?? []), s]);

  function closure(entry: string): Set<string> {
    const seen = new Set<string>();
    const todo = [entry];
    while (todo.length) {
      const file = todo.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const s of byFile.get(file) ?? []) if (s.resolved && byFile.has(s.resolved)) todo.push(s.resolved);
    }
    return seen;
  }

  it('src/rego/browser.ts and src/rego/portable.ts', () => {
    for (const entry of ['browser.ts', 'portable.ts']) {
      const reached = closure(join(REGO, entry));
      expect(reached.size).toBeGreaterThan(20);
      const nodeImports = [...reached].flatMap((f) => (byFile.get(f) ?? []).filter((s) => isNodeBuiltin(s.specifier)));
      expect(nodeImports.map(where)).toEqual([]);
    }
  });

  it('the Node entry does reach them (the check sees Node imports when there are some)', () => {
    const reached = closure(join(REGO, 'index.ts'));
    expect([...reached].some((f) => (byFile.get(f) ?? []).some((s) => s.specifier === 'node:zlib'))).toBe(true);
  });
});
