/**
 * How the service's log lines look: JSON (pino's own lines, one per line, for machines) or pretty
 * (pino-pretty, short coloured lines for a person at a terminal). LOG_FORMAT=auto, the default,
 * picks pretty only when stdout is a terminal, so that a pipe, a file, systemd or a container's
 * log driver always gets JSON.
 */
export const LOG_FORMAT_SETTINGS = ['auto', 'json', 'pretty'] as const;
export type LogFormatSetting = (typeof LOG_FORMAT_SETTINGS)[number];
export type LogFormat = 'json' | 'pretty';

export function chooseLogFormat(setting: LogFormatSetting, stdoutIsTerminal: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return stdoutIsTerminal ? 'pretty' : 'json';
}

/**
 * pino-pretty's options for the serve terminal: one line per entry, the clock time, the message,
 * and for the per-request line (http/request-log.ts) its method, route, status and milliseconds
 * in place of the fields. Options of the library, not a formatter of ours: they must be
 * serialisable, since the transport runs in a worker thread.
 */
export function prettyOptions(colorize: boolean): Record<string, unknown> {
  return {
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,reqId,method,url,status,ms',
    messageFormat: '{msg}{if method}: {method} {url} {status} {ms} ms{end}',
    destination: 1,
  };
}
