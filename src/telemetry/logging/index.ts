// Structured logs (pino): one JSON object per line on stderr, a level, `msg`, and the request's `request_id`
// and `session_id` on every line logged for a request. Members that can hold secrets are censored by pino's
// redaction wherever they appear (up to three levels deep), so a careless caller cannot print key material.
// On a terminal the same lines are rendered by pino-pretty (loaded only then), unless GUARDIAN_LOG_FORMAT=json.
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

export type LogFormat = 'json' | 'pretty';

/**
 * The server's logger: GUARDIAN_LOG_LEVEL (default info), GUARDIAN_LOG_FORMAT `json` | `pretty` (default: pretty
 * when stderr is a terminal, else json). Redaction applies before either format sees a line.
 */
export async function openLogger(
  env: Readonly<Record<string, string | undefined>>,
  setup: { terminal?: boolean; destination?: DestinationStream } = {},
): Promise<Logger> {
  const level = env.GUARDIAN_LOG_LEVEL || 'info';
  if (!isLogLevel(level))
    throw new Error(`GUARDIAN_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  const format = env.GUARDIAN_LOG_FORMAT || ((setup.terminal ?? process.stderr.isTTY) ? 'pretty' : 'json');
  if (format !== 'json' && format !== 'pretty')
    throw new Error(`GUARDIAN_LOG_FORMAT must be json or pretty, got ${JSON.stringify(format)}`);
  if (format === 'json')
    return createLogger({ level, ...(setup.destination ? { destination: setup.destination } : {}) });
  const { default: pretty } = await import('pino-pretty');
  const destination = pretty({
    destination: (setup.destination as NodeJS.WritableStream | undefined) ?? 2,
    sync: true,
    colorize: setup.destination ? false : undefined,
    ignore: 'pid,hostname,service',
  });
  return createLogger({ level, destination });
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
