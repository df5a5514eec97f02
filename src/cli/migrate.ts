import { parseArgs } from 'node:util';
import { migrateToLatest } from '../db/migrate.ts';
import { type DatabaseCommand, parseStrict } from './command.ts';
import { EXIT } from './failures.ts';

export const migrate: DatabaseCommand = {
  kind: 'database',
  // It is the migration: applying them first would leave it nothing to report.
  needsLatestSchema: false,
  help: `Options:
  --json           Print {"applied":[names]} on stdout, and errors as JSON on stderr.

Forward-only numbered files in migrations/, applied under an advisory lock so that concurrent starts
apply each once. \`plainpay serve\` applies them at start too, so with serve running this reports the
database up to date.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { json: { type: 'boolean', default: false } } }));
    return async ({ db }, out) => {
      const applied = await migrateToLatest(db);
      if (values.json) out.stdout(JSON.stringify({ applied }));
      else out.stdout(applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'The database is up to date.');
      return EXIT.ok;
    };
  },
};
