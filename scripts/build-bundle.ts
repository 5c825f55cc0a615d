// Builds the ACS policy library (rego/) into bundles/acs.tar.gz: `npx tsx scripts/build-bundle.ts [out]`.
// Run at install (after the runtime build) and by `guardian serve` when the bundle is missing or stale.
import { buildLibraryBundle, DEFAULT_BUNDLE_PATH } from '../src/policy/library.ts';

const out = process.argv[2] ?? DEFAULT_BUNDLE_PATH;
const started = performance.now();
try {
  const { bundle, revision, rules } = await buildLibraryBundle({ out });
  console.log(
    `build-bundle: ${out} (${bundle.byteLength} bytes, revision ${revision}, ${rules.length} annotated rules) in ${(performance.now() - started).toFixed(0)} ms`,
  );
} catch (err) {
  console.error(`build-bundle: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
