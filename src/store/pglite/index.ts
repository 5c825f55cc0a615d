export {
  openPgliteDriver,
  openPgliteEarly,
  PGLITE_SHARED_BUFFERS,
  type PgliteDriverOptions,
  type PgliteWorkerEvent,
} from './driver.ts';
