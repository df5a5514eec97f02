import { ConfigError } from '../config/config.ts';
import { AppError, isAppError } from '../core/errors.ts';

/**
 * The CLI's exit codes, sysexits(3) where one fits. docs/operations.md ("## CLI") lists the same
 * set: keep the two in step.
 */
export const EXIT = {
  ok: 0,
  /** The command ran and failed: a broken audit chain, an unknown account or key. */
  failure: 1,
  /** The command line is wrong: unknown command or option, missing or invalid value. */
  usage: 2,
  /** EX_UNAVAILABLE: the embedded database is held by a process the CLI cannot ask, or it stopped answering. */
  unavailable: 69,
  /** EX_CONFIG: an environment variable is invalid (docs/configuration.md). */
  config: 78,
} as const;

/** A wrong command line. An AppError so that `--json` reports it in the API's error shape. */
export class UsageError extends AppError {
  constructor(message: string, options: { param?: string } = {}) {
    super('invalid_request', message, options);
    this.name = 'UsageError';
  }
}

/**
 * The one place a CLI failure becomes an exit code and a message on stderr: the error object of
 * the HTTP API (core/errors.ts) under `--json`, its message otherwise, with the usage after a
 * usage error.
 */
/** Where a failure is written: a CliOutput (command.ts, which imports this module for UsageError). */
interface FailureOutput {
  stdout(line: string): void;
  stderr(line: string): void;
}

export function reportFailure(error: unknown, options: { json: boolean; usage: string }, out: FailureOutput): number {
  const { failure, exitCode } = classify(error);
  if (options.json) out.stderr(JSON.stringify(failure.toBody()));
  else out.stderr(error instanceof UsageError ? `${failure.message}\n\n${options.usage}` : failure.message);
  return exitCode;
}

function classify(error: unknown): { failure: AppError; exitCode: number } {
  if (error instanceof ConfigError) {
    // Each problem starts with the variable's name; the first one is the param, all are in the message.
    const variable = /^[A-Z][A-Z0-9_]*/.exec(error.problems[0] ?? '')?.[0];
    return {
      failure: new AppError('invalid_request', error.message, { param: variable, cause: error }),
      exitCode: EXIT.config,
    };
  }
  if (isAppError(error)) {
    const exitCode =
      error.code === 'invalid_request' ? EXIT.usage : error.code === 'unavailable' ? EXIT.unavailable : EXIT.failure;
    return { failure: error, exitCode };
  }
  // The operator owns this process and its database: unlike an API client, they get the real message.
  const message = error instanceof Error ? error.message : String(error);
  return { failure: new AppError('internal', message, { cause: error }), exitCode: EXIT.failure };
}
