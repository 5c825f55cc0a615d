export { openPgliteDriver, openPgliteEarly, PGLITE_SHARED_BUFFERS, type PgliteDriverOptions } from './driver.ts';
