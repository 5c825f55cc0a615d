// The allowed dependency arrows of acs-guardian, written down once and checked by `npm run deps`
// (dependency-cruiser; also a stage of .ci/run). ARCHITECTURE.md explains the layers; this file is the rule.
//
// How it is read: an import inside src/ must match at least one `allowed` rule (anything else is reported as
// `not-in-allowed`), and must match no `forbidden` rule. Type-only imports count (they couple folders as much as
// value imports do), and so do dynamic `import()`s.
//
// Adding a folder under src/ means adding its arrows below; a new arrow is a design decision, made here.
// test/deps/dependency-rules.test.ts cruises a probe tree with these rules: each rule catches its violation.

/** `src/<name>/` (or the file `src/<name>.ts`) as an anchored path pattern. */
const folder = (...names) => `^src/(${names.join('|')})(/|\\.ts$)`;

// Drivers of the database. Only src/store talks to the database (ARCHITECTURE.md "Store").
const DATABASE_DRIVERS = '(^|/)node_modules/(drizzle-orm|pg|pg-[^/]+|@electric-sql/pglite|postgres)/';

// The leaf modules of src/ (their own folder or file is group 1, for `$1` in leaves-stay-leaves).
const LEAVES = folder('json', 'package-version', 'recent-map', 'chain', 'http-body', 'worker-thread');

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycles anywhere (src, test, bench, scripts): a cycle makes evaluation order matter and two ' +
        'modules that cannot be understood apart.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'rego-imports-only-rego',
      severity: 'error',
      comment:
        'src/rego is the standalone `acs-guardian/rego` toolchain (it runs in a browser too): it imports nothing ' +
        'of the Guardian outside src/rego, only packages.',
      from: { path: '^src/rego/' },
      to: { path: '^src/', pathNot: '^src/rego/' },
    },
    {
      name: 'leaves-stay-leaves',
      severity: 'error',
      comment:
        'The leaves (src/json.ts, src/package-version.ts, src/recent-map.ts, src/chain, src/http-body, ' +
        'src/worker-thread) import nothing of ours, not even each other: everyone may build on them because they ' +
        'build on nothing (the `allowed` arrow to them would otherwise let one leaf lean on another).',
      from: { path: LEAVES },
      to: { path: '^src/', pathNot: '^src/$1/' },
    },
    {
      name: 'database-drivers-only-in-store',
      severity: 'error',
      comment:
        'src/store is the only door to the database: nothing else imports Drizzle, pg, PGlite or postgres.js ' +
        '(the CLI included).',
      from: { path: '^src/', pathNot: '^src/store/' },
      to: { path: DATABASE_DRIVERS },
    },
    {
      name: 'server-is-the-root',
      severity: 'error',
      comment:
        'src/server composes the Guardian (store, keys, engine, lifecycle, admin, replay, transports); only the ' +
        'CLI and the package entry src/index.ts import it.',
      from: { path: '^src/', pathNot: [folder('server', 'cli'), '^src/index\\.ts$'] },
      to: { path: folder('server') },
    },
    {
      name: 'cli-is-a-leaf',
      severity: 'error',
      comment: 'src/cli is the `guardian` command: nothing in src imports it (wiring goes the other way).',
      from: { path: '^src/', pathNot: folder('cli') },
      to: { path: folder('cli') },
    },
    {
      name: 'src-does-not-import-tests',
      severity: 'error',
      comment: 'The package ships src/ and dist/; test/, bench/ and scripts/ are not in it.',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'runtime-needs-only-dependencies',
      severity: 'error',
      comment:
        'What src/ imports at run time is a production dependency in package.json (devDependencies are absent ' +
        'from an installed package) and resolves.',
      from: {
        path: '^src/',
        // The Wasm runtime's build script runs only in a checkout (`npm run build`), where AssemblyScript is; the
        // console's browser sources are bundled by esbuild at build time (scripts/build.mjs), never run by Node.
        pathNot: ['^src/rego/[a-z/]*runtime/build\\.mjs$', '^src/console/ui/'],
      },
      to: {
        dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'],
        dependencyTypesNot: ['type-only'],
      },
    },
  ],

  // The arrows between the folders of src/, lowest layer first. A folder may always import its own files,
  // Node's built-ins and its packages (subject to the forbidden rules above).
  allowed: [
    {
      comment: 'Any file of a folder may import the other files of the same folder.',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/$1/' },
    },
    {
      comment: 'Node built-ins and packages (runtime-needs-only-dependencies keeps src/ on production ones).',
      from: {},
      to: { dependencyTypes: ['core', 'npm', 'npm-dev'] },
    },
    {
      comment: 'Tests, benchmarks and scripts may import anything.',
      from: { path: '^(test|bench|scripts|bin)/' },
      to: {},
    },
    {
      comment:
        'src/json.ts (JSON types and guards), src/package-version.ts, src/chain (ACS §8.2 hash chain, RFC 8785), ' +
        'src/http-body, src/worker-thread and src/recent-map.ts are leaves: they import nothing of ours. Everyone outside src/rego may ' +
        'use them.',
      from: { path: '^src/', pathNot: folder('rego') },
      to: { path: LEAVES },
    },
    {
      comment: 'src/crypto (signature algorithms, keys) builds on the leaves only.',
      from: { path: folder('crypto') },
      to: { path: folder('json', 'chain', 'worker-thread') },
    },
    {
      comment: 'src/store (the only door to the database) signs checkpoints with crypto\'s signer interface.',
      from: { path: folder('store') },
      to: { path: folder('crypto') },
    },
    {
      comment:
        'src/policy (the engine host over opa-wasm, the ACS input contract, the worker pool) loads bundles ' +
        'and runs host builtins through src/rego.',
      from: { path: folder('policy') },
      to: { path: folder('rego') },
    },
    {
      comment: 'src/acs (the request pipeline) evaluates with policy, stores with store, signs with crypto.',
      from: { path: folder('acs') },
      to: { path: folder('crypto', 'store', 'policy') },
    },
    {
      comment:
        'The request pipeline reports each step to the telemetry observation port (a type-only interface); ' +
        'nothing else of src/telemetry is visible to it.',
      from: { path: folder('acs') },
      to: { path: '^src/telemetry/observation\\.ts$' },
    },
    {
      comment:
        'src/telemetry (spans, OCSF events, metrics, logs) describes steps with the types of acs, policy and store, ' +
        'and checks the /metrics token with crypto.',
      from: { path: folder('telemetry') },
      to: { path: folder('acs', 'policy', 'store', 'crypto') },
    },
    {
      comment:
        'src/agbom (the AgBOM per session: versions, diffs, renderers) keeps its versions in the store; the ' +
        'pipeline tracks it per step, the admin API serves it, `audit verify` checks it.',
      from: { path: folder('agbom') },
      to: { path: folder('store') },
    },
    {
      comment: 'Who reads the AgBOM: the request pipeline, the admin API, the audit verifier and replay (input.agbom).',
      from: { path: folder('acs', 'admin', 'audit', 'replay') },
      to: { path: folder('agbom') },
    },
    {
      comment: 'src/client (the agent SDK, `acs-guardian/client`) shares the ACS wire types and signing rules.',
      from: { path: folder('client') },
      to: { path: folder('acs') },
    },
    {
      comment: 'src/audit (verify, export, prune) reads the store and checks checkpoint signatures.',
      from: { path: folder('audit') },
      to: { path: folder('crypto', 'store') },
    },
    {
      comment: 'src/lifecycle (bundle registry, activation, fleet sync, shadow) builds and loads bundles.',
      from: { path: folder('lifecycle') },
      to: { path: folder('store', 'policy', 'rego') },
    },
    {
      comment: 'src/replay re-runs recorded steps through the live evaluate stage of src/acs.',
      from: { path: folder('replay') },
      to: { path: folder('store', 'policy', 'rego', 'acs') },
    },
    {
      comment: 'src/admin (the admin HTTP API) drives the lifecycle, reads sessions and decisions from the store, verifies chains ' +
        'with audit and keys with crypto; src/server mounts it with replay and AgBOM routes beside it.',
      from: { path: folder('admin') },
      to: { path: folder('lifecycle', 'crypto', 'store', 'audit') },
    },
    {
      comment: 'src/console (the operator console) serves its bundled pages and checks sessions with admin\'s tokens.',
      from: { path: folder('console') },
      to: { path: folder('admin') },
    },
    {
      comment: 'src/server is the composition root: it may import every layer above (not the CLI).',
      from: { path: folder('server') },
      to: { path: '^src/', pathNot: folder('cli') },
    },
    {
      comment: 'src/index.ts (the package entry) re-exports the server.',
      from: { path: '^src/index\\.ts$' },
      to: { path: folder('server') },
    },
    { comment: 'src/cli (the `guardian` command) may import anything.', from: { path: folder('cli') }, to: {} },
  ],
  allowedSeverity: 'error',

  options: {
    // The AssemblyScript sources of the policy Wasm runtime are not part of the Node program: asc compiles them
    // as one unit against its own standard library (tsconfig.json excludes them too).
    exclude: { path: ['^dist/', '^src/rego/[a-z/]*runtime/assembly/'] },
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types'],
    },
  },
};
