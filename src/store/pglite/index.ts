export { openPgliteDriver, PGLITE_SHARED_BUFFERS, type PgliteDriverOptions } from './driver.ts';
