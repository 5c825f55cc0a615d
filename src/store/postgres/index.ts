export { openPostgresDriver, type PostgresDriverOptions } from './driver.ts';
