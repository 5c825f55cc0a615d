// Transports and app wiring for the ACS Guardian.
export { createHttpApp, startHttpServer, type HttpAppOptions, type RunningHttpServer } from './http.ts';
export { serveStdio, FrameParser, encodeFrame, type FrameEvent, type StdioOptions } from './stdio.ts';
export {
  openGuardianRuntime,
  resolveHmacKey,
  loadPolicyEngine,
  type GuardianRuntime,
  type GuardianRuntimeOptions,
  type HmacKeyMaterial,
} from './app.ts';
export { StartupTimings, type StartupPhase, type StartupReport } from './startup-timings.ts';
