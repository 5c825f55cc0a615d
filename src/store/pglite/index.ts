export { openPgliteDriver, type PgliteDriverOptions } from './driver.ts';
