// Builds migrations/pglite-template.tar.gz (src/store/pglite/template.ts): a PGlite data directory initialised,
// migrated and shut down cleanly, from which `guardian serve` seeds a fresh data dir instead of running initdb.
// Run by `npm run prepare`; skipped when the template is already built for the current migrations.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPgliteDriver } from '../src/store/pglite/index.ts';
import { PGLITE_TEMPLATE_PATH, pgliteTemplateIsCurrent, writePgliteTemplate } from '../src/store/pglite/template.ts';

if (await pgliteTemplateIsCurrent()) {
  console.log(`build-pglite-template: ${PGLITE_TEMPLATE_PATH} is current`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'guardian-pglite-template-'));
  try {
    const driver = await openPgliteDriver({ dataDir: dir, seed: false });
    await driver.migrate();
    await driver.close();
    await writePgliteTemplate(join(dir, 'pgdata'));
    console.log(`build-pglite-template: wrote ${PGLITE_TEMPLATE_PATH}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
