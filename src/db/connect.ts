import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { AppError } from '../core/errors.ts';
import { parseStoredJson } from '../core/json-text.ts';
import type { Database } from './database.ts';
import { PGliteDialect } from './pglite-dialect.ts';

export type DatabaseTarget = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string };

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: DatabaseTarget['kind'];
  close(): Promise<void>;
}

const INT8_OID = 20;
// json columns hold text exactly as written (json, not jsonb): callers' metadata comes back that way.
const JSON_OID = 114;

/**
 * Opens the database named by the config. int8 columns come back as bigint on both backends
 * (pg would give strings, PGlite numbers) so money never passes through a float.
 */
export async function connectDatabase(
  target: DatabaseTarget,
  options: { poolSize?: number } = {},
): Promise<DatabaseHandle> {
  if (target.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: target.url,
      max: options.poolSize ?? 10,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID
            ? (value: string) => BigInt(value)
            : oid === JSON_OID
              ? parseStoredJson
              : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }

  const dataDir = resolve(target.dataDir);
  mkdirSync(dirname(dataDir), { recursive: true });
  const releaseLock = acquireDataDirLock(dataDir);
  try {
    const pglite = await PGlite.create({
      dataDir,
      parsers: { [INT8_OID]: (value: string) => BigInt(value), [JSON_OID]: parseStoredJson },
    });
    const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
    return {
      db,
      kind: 'pglite',
      async close() {
        await db.destroy();
        await pglite.close();
        releaseLock();
      },
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}

/** An AppError ('unavailable') so that the CLI reports it like any other failure, `--json` included. */
export class DataDirLockedError extends AppError {
  constructor(dataDir: string, pid: number) {
    super(
      'unavailable',
      `The embedded database at ${dataDir} is already open in process ${pid}. PGlite allows one process per data ` +
        'directory: stop that process, set PLAINPAY_DATA_DIR to another directory, or set DATABASE_URL to share a Postgres.',
    );
    this.name = 'DataDirLockedError';
  }
}

/**
 * The live process, other than this one, that holds the embedded database's lock; undefined when
 * none does. The CLI then asks that process (a running serve) instead of opening the database.
 */
export function dataDirLockHolder(dataDir: string): number | undefined {
  let holder: number;
  try {
    holder = Number.parseInt(readFileSync(`${resolve(dataDir)}.lock`, 'utf8'), 10);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder) ? holder : undefined;
}

/** Lock files this process holds (a second open of one data dir in one process is refused too). */
const heldLocks = new Set<string>();

/**
 * PGlite does not lock its data directory and two writers corrupt it (STACK.md), so we take
 * an exclusive lock file beside it, holding our pid. A lock left by a dead process is taken over,
 * and so is one holding our own pid that this process does not hold: a previous run that was
 * killed (in a container, node is pid 1 on every start).
 */
function acquireDataDirLock(dataDir: string): () => void {
  const lockPath = `${dataDir}.lock`;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (createLockFile(lockPath)) {
      heldLocks.add(lockPath);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        heldLocks.delete(lockPath);
        rmSync(lockPath, { force: true });
        process.off('exit', release);
      };
      process.on('exit', release);
      return release;
    }
    if (heldLocks.has(lockPath)) throw new DataDirLockedError(dataDir, process.pid);
    let holder: number;
    try {
      holder = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
    } catch (error) {
      // Released between our attempt and this read: try again.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new DataDirLockedError(dataDir, holder);
    }
    rmSync(lockPath, { force: true });
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}

/**
 * Creates the lock file with our pid already in it, or returns false if it exists. Written to a
 * private file first and linked into place (link fails if the name exists), so no other process
 * can ever read an empty lock and take it for a stale one.
 */
function createLockFile(lockPath: string): boolean {
  const staging = `${lockPath}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(staging, String(process.pid), { flag: 'wx' });
  try {
    linkSync(staging, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(staging, { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
