// Structured logs (pino): one JSON object per line on stderr, a level, `msg`, and the request's `request_id`
// and `session_id` on every line logged for a request. Members that can hold secrets are censored by pino's
// redaction wherever they appear (up to three levels deep), so a careless caller cannot print key material.
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Member names that never reach a log line with their value. */
const SECRET_MEMBERS = [
  'ikm',
  'hmacIkm',
  'key',
  'privateKey',
  'secret',
  'token',
  'authorization',
  'signature',
  'password',
  'GUARDIAN_HMAC_IKM',
  'GUARDIAN_ADMIN_TOKEN',
  'GUARDIAN_METRICS_TOKEN',
  'GUARDIAN_OCSF_HTTP_TOKEN',
];
export const REDACTED_PATHS = SECRET_MEMBERS.flatMap((m) => [m, `*.${m}`, `*.*.${m}`]);

export interface LoggerSetup {
  level?: LogLevel;
  /** Where lines go; default stderr (fd 2, synchronous, so the last lines before an exit are not lost). */
  destination?: DestinationStream;
}

export function isLogLevel(v: string): v is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(v);
}

export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? 'info',
    base: { service: 'acs-guardian' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  };
  return pino(options, setup.destination ?? pino.destination({ dest: 2, sync: true }));
}
