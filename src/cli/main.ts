import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/config.ts';
import { type AdminContext, type CliCommand, type CliOutput, hasFlag, processOutput } from './command.ts';
import { type CommandEntry, commandHelp, commandUsage, resolveCommand } from './commands.ts';
import { EXIT, reportFailure, UsageError } from './failures.ts';

// Commands are imported when used (commands.ts): `plainpay mcp` (a small client) then starts without
// loading the whole service (chain, agent, HTTP), which a desktop assistant notices as start-up delay.

/** Runs one CLI command line in this process and returns the process exit code. */
export async function runCli(argv: string[], out: CliOutput = processOutput): Promise<number> {
  if (argv[0] === '--version' || argv[0] === '-v') {
    out.stdout(packageVersion());
    return EXIT.ok;
  }
  return runCommandLine(argv, out, async (command, args) => {
    switch (command.kind) {
      case 'client':
        return command.parse(args)(process.env, out);
      case 'service': {
        const work = command.parse(args);
        return work(loadConfig(), out, runForwardedCommand);
      }
      case 'database': {
        const work = command.parse(args);
        const config = loadConfig();
        const { runOnDatabase } = await import('./database-access.ts');
        return runOnDatabase(config, command, work, work.argv ?? argv, out);
      }
    }
  });
}

/**
 * Runs a command line that a CLI forwarded to `plainpay serve` (cli/admin-socket.ts), on serve's
 * open database: the same resolution, help, work and error reporting as runCli. Only database
 * commands run there.
 */
export function runForwardedCommand(argv: string[], context: AdminContext, out: CliOutput): Promise<number> {
  return runCommandLine(argv, out, async (command, args, entry) => {
    if (command.kind !== 'database') {
      throw new UsageError(`'plainpay ${entry.path.join(' ')}' does not run inside the service.`);
    }
    return command.parse(args)(context, out);
  });
}

async function runCommandLine(
  argv: string[],
  out: CliOutput,
  run: (command: CliCommand, args: string[], entry: CommandEntry) => Promise<number>,
): Promise<number> {
  const json = hasFlag(argv, '--json');
  const resolved = resolveCommand(argv);
  if (resolved.kind === 'help') {
    out.stdout(resolved.text);
    return EXIT.ok;
  }
  if (resolved.kind === 'unknown') {
    return reportFailure(new UsageError(resolved.message), { json, usage: resolved.usage }, out);
  }
  try {
    const command = await resolved.entry.load();
    if (resolved.help) {
      out.stdout(commandHelp(resolved.entry, command));
      return EXIT.ok;
    }
    return await run(command, resolved.args, resolved.entry);
  } catch (error) {
    return reportFailure(error, { json, usage: commandUsage(resolved.entry) }, out);
  }
}

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
