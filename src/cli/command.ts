import type { Kysely } from 'kysely';
import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Database } from '../db/database.ts';
import type { Runtime } from '../runtime.ts';
import { UsageError } from './failures.ts';

/**
 * Where a command writes, one line per call: this process's stdout and stderr, or, for a command
 * forwarded to `plainpay serve`, the admin socket back to the CLI that asked.
 */
export interface CliOutput {
  stdout(line: string): void;
  stderr(line: string): void;
}

export const processOutput: CliOutput = {
  stdout: (line) => {
    process.stdout.write(`${line}\n`);
  },
  stderr: (line) => {
    process.stderr.write(`${line}\n`);
  },
};

/**
 * What a database command works with: the running service's (through the admin socket), or a
 * database the CLI opened itself. A Runtime is one.
 */
export interface AdminContext {
  db: Kysely<Database>;
  secretBox: SecretBox;
  clock: Clock;
  /**
   * The whole runtime, for a command that reaches the chain or a provider (`reconcile`): serve's
   * own, or one the CLI makes on the database it opened, on first use.
   */
  runtime?: () => Promise<Runtime>;
  /** The configuration of the process the work runs in: serve's, when forwarded to it. */
  config: Pick<Config, 'publicBaseUrl'>;
}

interface CommandHelp {
  /** What `--help` shows under the usage line and summary: the options, and notes. */
  help: string;
}

/**
 * The work of a database command, once its arguments are checked. `argv`, when set, is the command
 * line to send when the work runs inside `plainpay serve` instead (a file path made absolute, say,
 * since serve's working directory is not the CLI's).
 */
export type DatabaseWork = ((context: AdminContext, out: CliOutput) => Promise<number>) & { argv?: string[] };

/**
 * Each command checks its arguments in `parse` (throwing UsageError) before anything is opened,
 * and returns the work to do. A database command's work runs in the CLI process, or inside
 * `plainpay serve` when serve holds the embedded database; the two runs are the same code.
 */
export interface DatabaseCommand extends CommandHelp {
  kind: 'database';
  /** Apply pending migrations to a database the CLI opens itself (serve migrates its own at start). */
  needsLatestSchema: boolean;
  parse(args: string[]): DatabaseWork;
}

/**
 * Runs a command line another CLI forwarded (main.ts's runForwardedCommand), handed to serve by
 * the CLI that starts it: serve is itself one of the commands, so it does not import their table.
 */
export type ForwardedCommands = (argv: string[], context: AdminContext, out: CliOutput) => Promise<number>;

/** `serve`: runs the service from the configuration; never forwarded. */
export interface ServiceCommand extends CommandHelp {
  kind: 'service';
  parse(args: string[]): (config: Config, out: CliOutput, forwarded: ForwardedCommands) => Promise<number>;
}

/** `mcp`: a client of a running service over HTTP; needs no configuration or database. */
export interface ClientCommand extends CommandHelp {
  kind: 'client';
  parse(args: string[]): (env: NodeJS.ProcessEnv, out: CliOutput) => Promise<number>;
}

export type CliCommand = DatabaseCommand | ServiceCommand | ClientCommand;

/**
 * Runs node's parseArgs (strict) and turns its complaints into a UsageError naming the option, so
 * that `--json` reports them like any other error. The param is the option's name without dashes,
 * as the API names a field.
 */
export function parseStrict<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS_')) throw error;
    const message = (error as Error).message;
    throw new UsageError(message, { param: /'--?([^'\s<=]+)/.exec(message)?.[1] });
  }
}

/** The value of a required string option, or a UsageError naming it. */
export function required(value: string | undefined, option: string, example: string): string {
  if (value === undefined || value.trim() === '') {
    throw new UsageError(`--${option} is required: ${example}`, { param: option });
  }
  return value;
}

/** Whether a flag is among the arguments before a `--` terminator. */
export function hasFlag(args: readonly string[], ...flags: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => flags.includes(arg));
}
