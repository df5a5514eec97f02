import { resolve } from 'node:path';
import type { Config } from '../config/config.ts';
import { loadMasterKey } from '../config/master-key.ts';
import { systemClock } from '../core/clock.ts';
import { createSecretBox, type SecretBox } from '../core/secret-box.ts';
import { connectDatabase, type DatabaseHandle, DataDirLockedError, dataDirLockHolder } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { connectToService, forwardCommand } from './admin-socket.ts';
import type { Runtime } from '../runtime.ts';
import type { CliOutput, DatabaseCommand, DatabaseWork } from './command.ts';

/**
 * Runs a database command where the database is. The embedded database (PGlite) opens in one
 * process only: when a live process holds it and answers on its admin socket (a running
 * `plainpay serve`), the whole command line is sent there and runs on serve's open database; its
 * output and exit code come back. Otherwise the CLI opens the database itself. On Postgres
 * (DATABASE_URL) the CLI always connects directly.
 */
export async function runOnDatabase(
  config: Config,
  command: DatabaseCommand,
  work: DatabaseWork,
  argv: string[],
  out: CliOutput,
): Promise<number> {
  if (config.database.kind === 'pglite') {
    const { dataDir } = config.database;
    const holder = dataDirLockHolder(dataDir);
    if (holder !== undefined) {
      const service = await connectToService(dataDir);
      // Not a serve (another CLI command), or a serve starting up or stopping: the lock says why.
      if (!service) throw new DataDirLockedError(resolve(dataDir), holder);
      return forwardCommand(service, argv, out);
    }
  }
  const handle = await connectDatabase(config.database, { poolSize: 1 });
  let runtime: Promise<Runtime> | undefined;
  try {
    if (command.needsLatestSchema) await migrateToLatest(handle.db);
    let secretBox: SecretBox | undefined;
    return await work(
      {
        db: handle.db,
        clock: systemClock,
        config,
        // Read (or created) on first use: listing keys or verifying the audit log needs no master key.
        get secretBox() {
          secretBox ??= createSecretBox(loadMasterKey(config));
          return secretBox;
        },
        // Made on first use, on this database: only a command that reaches the chain or a provider needs one.
        runtime: () => {
          runtime ??= serviceRuntime(config, handle);
          return runtime;
        },
      },
      out,
    );
  } finally {
    await (await runtime?.catch(() => undefined))?.close();
    await handle.close();
  }
}

/**
 * A runtime on the database the CLI opened (its close leaves that database open). It logs to
 * stderr: stdout is the command's output, which `--json` and `--csv` keep clean.
 */
async function serviceRuntime(config: Config, handle: DatabaseHandle): Promise<Runtime> {
  const [{ createRuntime }, { createLogger }, { default: pino }] = await Promise.all([
    import('../runtime.ts'),
    import('../core/logger.ts'),
    import('pino'),
  ]);
  return createRuntime(config, {
    database: handle,
    migrate: false,
    logger: createLogger(config.logLevel, pino.destination(2)),
  });
}
