import pino, { type Logger } from 'pino';
import { type LogFormat, prettyOptions } from './log-format.ts';

/**
 * pino with redaction: an API key or secret must never reach a log line, whatever the
 * caller passes. Keys and whsec_ secrets inside free text are masked by the serializer too.
 */
export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'secret',
  '*.secret',
  'api_key',
  '*.api_key',
  'webhook_secret',
  '*.webhook_secret',
  'password',
  'anthropicApiKey',
  '*.anthropicApiKey',
];

const SECRET_PATTERN = /(sk_(?:live|test)_[0-9A-Za-z]{4})[0-9A-Za-z]+|(whsec_)[A-Za-z0-9+/=]+/g;

export function maskSecrets(text: string): string {
  return text.replace(
    SECRET_PATTERN,
    (_m, key: string | undefined, wh: string | undefined) => `${key ?? wh}[REDACTED]`,
  );
}

export interface LoggerOptions {
  /**
   * pretty: through pino-pretty as a pino transport (a worker thread) to stdout, coloured when
   * `colorize`; json (the default): pino's JSON lines to `destination` (stdout by default).
   */
  format?: LogFormat;
  colorize?: boolean;
}

export function createLogger(level: string, destination?: pino.DestinationStream, options: LoggerOptions = {}): Logger {
  const transport =
    options.format === 'pretty' && destination === undefined
      ? { transport: { target: 'pino-pretty', options: prettyOptions(options.colorize ?? false) } }
      : {};
  return pino(
    {
      level,
      ...transport,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      hooks: {
        // Masks secrets that slipped into a message string (e.g. an error quoting input).
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a) => (typeof a === 'string' ? maskSecrets(a) : a)) as Parameters<typeof method>,
          );
        },
        // And in the whole line as written: the message and stack of an error (and its cause), a
        // nested field, a child logger's bindings, a client-chosen request id. Redaction by path
        // cannot reach those (test/security.secrets.test.ts).
        streamWrite: maskSecrets,
      },
    },
    destination,
  );
}

export type { Logger };
