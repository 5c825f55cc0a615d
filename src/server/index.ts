// Transports and app wiring for the ACS Guardian.
export { createHttpApp, startHttpServer, type HttpAppOptions, type RunningHttpServer } from './http.ts';
export { serveStdio, FrameParser, encodeFrame, type FrameEvent } from './stdio.ts';
export {
  openGuardianRuntime,
  resolveHmacKey,
  loadPolicyEngine,
  type GuardianRuntime,
  type GuardianRuntimeOptions,
  type HmacKeyMaterial,
} from './app.ts';
