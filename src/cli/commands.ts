import { type CliCommand, hasFlag } from './command.ts';

/**
 * Every CLI command, in the order help lists them. An entry holds what the overview needs; the
 * command itself (its options, its work) is imported when used, so that `plainpay mcp` (a small
 * client a desktop assistant starts) and `--help` load nothing of the service.
 */
export interface CommandEntry {
  /** The words that name it: `['keys', 'revoke']`. */
  path: readonly [string] | readonly [string, string];
  /** The command line after `plainpay`, with its options. */
  synopsis: string;
  summary: string;
  load(): Promise<CliCommand>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    path: ['serve'],
    synopsis: 'serve [--role all|api|checkout|worker]',
    summary: 'Run the service (default: all roles in one process).',
    load: async () => (await import('./serve.ts')).serve,
  },
  {
    path: ['migrate'],
    synopsis: 'migrate [--json]',
    summary: 'Apply pending database migrations.',
    load: async () => (await import('./migrate.ts')).migrate,
  },
  {
    path: ['accounts', 'create'],
    synopsis: 'accounts create --name NAME [--live] [--json]',
    summary: 'Create an account, its first API key and its webhook signing secrets.',
    load: async () => (await import('./accounts.ts')).accountsCreate,
  },
  {
    path: ['keys', 'list'],
    synopsis: 'keys list --account ID [--json]',
    summary: "List an account's API keys (never the secrets).",
    load: async () => (await import('./keys.ts')).keysList,
  },
  {
    path: ['keys', 'create'],
    synopsis: 'keys create --account ID [--live] [--scopes a,b] [--name N] [--json]',
    summary: 'Issue an API key; its secret is printed once.',
    load: async () => (await import('./keys.ts')).keysCreate,
  },
  {
    path: ['keys', 'revoke'],
    synopsis: 'keys revoke --account ID --id KEY_ID [--json]',
    summary: 'Revoke an API key; the API refuses it from the next request on.',
    load: async () => (await import('./keys.ts')).keysRevoke,
  },
  {
    path: ['audit', 'verify'],
    synopsis: 'audit verify [--checkpoint C] [--json]',
    summary: "Check the hash chain of every account's action log, and every money row against it.",
    load: async () => (await import('./audit.ts')).auditVerify,
  },
  {
    path: ['audit', 'checkpoint'],
    synopsis: 'audit checkpoint',
    summary: "Verify, then print every account's chain head, to keep outside the database.",
    load: async () => (await import('./audit.ts')).auditCheckpoint,
  },
  {
    path: ['collection', 'list'],
    synopsis: 'collection list [--json]',
    summary: "List the provider accounts payers' money is collected into (never a secret).",
    load: async () => (await import('./collection.ts')).collectionList,
  },
  {
    path: ['collection', 'set'],
    synopsis: 'collection set paystack|mpesa --credentials FILE [--live] [--account ID] [--json]',
    summary: 'Set the provider credentials a rail collects with, instance-wide or for one account.',
    load: async () => (await import('./collection.ts')).collectionSet,
  },
  {
    path: ['collection', 'remove'],
    synopsis: 'collection remove paystack|mpesa [--live] [--account ID] [--json]',
    summary: 'Stop a rail collecting; what was paid through it is still followed up.',
    load: async () => (await import('./collection.ts')).collectionRemove,
  },
  {
    path: ['collection', 'adopt'],
    synopsis: 'collection adopt COLLECTION_ID [--json]',
    summary: "Take over a merchant's credential from before collection became the operator's.",
    load: async () => (await import('./collection.ts')).collectionAdopt,
  },
  {
    path: ['reconcile'],
    synopsis: 'reconcile [--date YYYY-MM-DD] [--json|--csv]',
    summary: 'Reconcile a UTC day: provider collections, the ledger, the chain and the treasury (default: yesterday).',
    load: async () => (await import('./reconcile.ts')).reconcile,
  },
  {
    path: ['chain', 'adopt'],
    synopsis: 'chain adopt [CHAIN_KEY] [--old-chain-gone] [--json]',
    summary: 'Show, or accept, the chain a settlement worker found its node serving instead of the expected one.',
    load: async () => (await import('./chain.ts')).chainAdopt,
  },
  {
    path: ['listen'],
    synopsis: 'listen --forward-to URL [--api-url URL] [--events TYPES]',
    summary: "Forward the account's new events, signed, to a local receiver (key: PLAINPAY_API_KEY).",
    load: async () => (await import('./listen.ts')).listen,
  },
  {
    path: ['mcp'],
    synopsis: 'mcp [--url URL]',
    summary: 'MCP over stdio for desktop assistants (key: PLAINPAY_API_KEY).',
    load: async () => (await import('./mcp.ts')).mcp,
  },
];

export type Resolution =
  | { kind: 'help'; text: string }
  | { kind: 'unknown'; message: string; usage: string }
  | { kind: 'command'; entry: CommandEntry; args: string[]; help: boolean };

/** Finds the command an argv names, or the help it asks for. Pure: reads no file and no environment. */
export function resolveCommand(argv: readonly string[]): Resolution {
  const [first, second] = argv;
  if (first === undefined) return { kind: 'unknown', message: 'Missing command.', usage: overview() };
  if (first === 'help' || first === '--help' || first === '-h') return { kind: 'help', text: overview() };
  const group = COMMANDS.filter((entry) => entry.path[0] === first);
  const single = group.find((entry) => entry.path.length === 1);
  if (single) return commandResolution(single, argv.slice(1));
  if (group.length === 0) return { kind: 'unknown', message: `Unknown command '${first}'.`, usage: overview() };
  const sub = group.find((entry) => entry.path[1] === second);
  if (sub) return commandResolution(sub, argv.slice(2));
  if (second !== undefined && !second.startsWith('-')) {
    return { kind: 'unknown', message: `Unknown command '${first} ${second}'.`, usage: groupHelp(first, group) };
  }
  if (hasFlag(argv.slice(1), '--help', '-h')) return { kind: 'help', text: groupHelp(first, group) };
  const names = group.map((entry) => entry.path[1]).join(', ');
  return { kind: 'unknown', message: `'plainpay ${first}' needs a command: ${names}.`, usage: groupHelp(first, group) };
}

function commandResolution(entry: CommandEntry, args: string[]): Resolution {
  return { kind: 'command', entry, args, help: hasFlag(args, '--help', '-h') };
}

/** The full `--help` of one command. */
export function commandHelp(entry: CommandEntry, command: CliCommand): string {
  return `Usage: plainpay ${entry.synopsis}\n\n${entry.summary}\n\n${command.help}`;
}

/** What follows a usage error of one command. */
export function commandUsage(entry: CommandEntry): string {
  return `Usage: plainpay ${entry.synopsis}\nRun 'plainpay ${entry.path.join(' ')} --help' for its options.`;
}

function listing(entries: readonly CommandEntry[]): string {
  return entries.map((entry) => `  plainpay ${entry.synopsis}\n      ${entry.summary}`).join('\n');
}

function groupHelp(group: string, entries: readonly CommandEntry[]): string {
  return `Usage: plainpay ${group} <command>\n\nCommands:\n${listing(entries)}\n\nRun 'plainpay ${group} <command> --help' for a command's options.`;
}

function overview(): string {
  return `plainpay — local-currency payments settled on-chain, with an AI agent under policy

Usage: plainpay <command> [options]

Commands:
${listing(COMMANDS)}

Options:
  -h, --help      Show help; after a command, that command's (plainpay keys create --help).
  -v, --version   Print the version.
  --json          On commands that print a result: print it as JSON, and errors as the API's
                  error object on stderr: {"error":{"type","code","message","param"}}.

While \`plainpay serve\` runs on the embedded database, the commands that use the database
run inside it (through its admin socket), so they work without stopping the service.
Configuration comes from environment variables: see docs/configuration.md.
Exit codes: 0 ok, 1 failed, 2 usage, 69 service unavailable, 78 configuration.`;
}
