import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.ts';

// Commands are imported when used: `plainpay mcp` (a small client) then starts without loading the
// whole service (chain, agent, HTTP), which a desktop assistant notices as start-up delay.

const USAGE = `plainpay — local-currency payments settled on-chain, with an AI agent under policy

Usage:
  plainpay serve [--role all|api|checkout|worker]   run the service (default: all roles in one process)
  plainpay migrate                                  apply database migrations
  plainpay accounts create --name NAME [--live] [--json]
  plainpay keys list --account ID [--json]
  plainpay keys create --account ID [--live] [--scopes a,b] [--name N] [--json]
  plainpay keys revoke --account ID --id KEY_ID
  plainpay audit verify [--json]                    check the action log's hash chain
  plainpay mcp [--url URL]                          MCP over stdio for desktop assistants (key: PLAINPAY_API_KEY)

Configuration comes from environment variables: see docs/configuration.md.`;

/** Runs one CLI command and returns the process exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  try {
    // A client-side bridge: it needs no service configuration (see cli/mcp.ts).
    if (command === 'mcp') return await (await import('./mcp.ts')).mcpCommand(rest, process.env);
    const config = loadConfig();
    switch (command) {
      case 'serve':
        return await (await import('./serve.ts')).serveCommand(
          config,
          parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } } }).values,
        );
      case 'migrate':
        return await (await import('./migrate.ts')).migrateCommand(config);
      case 'accounts':
        return await (await import('./accounts.ts')).accountsCommand(config, rest);
      case 'keys':
        return await (await import('./keys.ts')).keysCommand(config, rest);
      case 'audit':
        return await (await import('./audit.ts')).auditCommand(config, rest);
      default:
        console.error(`Unknown command '${command}'.\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 78; // EX_CONFIG
    }
    if (error instanceof TypeError && (error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  }
}
