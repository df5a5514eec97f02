import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import { AppError, isConnectionFailure } from '../core/errors.ts';
import { parseStoredJson } from '../core/json-text.ts';
import type { Logger } from '../core/logger.ts';
import type { Database } from './database.ts';
import { restoreDatabaseImage, usableDatabaseImage } from './database-image.ts';
import { type Notifications, pgliteNotifications, postgresNotifications } from './notifications.ts';
import { PGliteDialect } from './pglite-dialect.ts';
import { prepareMarkedStatements } from './prepared-statements.ts';

export type DatabaseTarget =
  /** preparedStatements: off behind a pooler in transaction mode (prepared-statements.ts). Default on. */
  { kind: 'postgres'; url: string; preparedStatements?: boolean } | { kind: 'pglite'; dataDir: string };

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: DatabaseTarget['kind'];
  /** LISTEN/NOTIFY on this database (notifications.ts). */
  notifications: Notifications;
  close(): Promise<void>;
}

const INT8_OID = 20;
// json columns hold text exactly as written (json, not jsonb): callers' metadata comes back that way.
const JSON_OID = 114;

/**
 * A connect to Postgres that takes longer than this fails (and so does the wait for a free pooled
 * connection): a request answers 503 rather than hanging while the server is unreachable.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

export interface ConnectOptions {
  poolSize?: number;
  /** Where a lost and a regained connection to Postgres are reported, once per outage. */
  logger?: Pick<Logger, 'warn' | 'info' | 'debug'>;
  /** Told, one line each, before a step that can take seconds (creating the embedded database). */
  progress?: (line: string) => void;
}

/**
 * V8 recompiles a WebAssembly function with its optimizing compiler once the function has run
 * about this many bytes of code (V8's default is 1.8 MB). At that default, PGlite's own start (the
 * Postgres backend reading its catalogs: code that does not run hot again) sent functions to the
 * optimizer on background threads, and the main thread then waited for those threads: 100 to
 * 225 ms of every start of the embedded database on 2 cores (docs/performance.md). The flag is
 * V8's, so it holds for every wasm module of the process, from here on. What runs hot under load
 * still passes a hundred times the budget within seconds: embedded POST /v1/payments measured
 * 0.95 to 1.00 its baseline's throughput (a PGlite baseline at V8's default budget; bench/http.ts),
 * as before.
 */
const WASM_TIERING_BUDGET = 180_000_000;

/**
 * Opens the database named by the config. int8 columns come back as bigint on both backends
 * (pg would give strings, PGlite numbers) so money never passes through a float.
 */
/** The setting that marks a session as plainpay's own (see the Postgres pool below). */
const SERVICE_SESSION = { name: 'plainpay.session', value: 'service' } as const;

/**
 * The connection string with the service's mark added to its startup options (`?options=…`, kept
 * with any the operator gave). In the URL, not in pg's `options`: pg lets the URL's own options
 * replace that. At startup, not by a query on connect: that query would run on a client the pool
 * has already handed to its first query.
 */
function markedAsService(connectionString: string): { connectionString: string; options?: string } {
  const mark = `-c ${SERVICE_SESSION.name}=${SERVICE_SESSION.value}`;
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    // Not a URL: pg takes no options from it, so they cannot collide.
    return { connectionString, options: mark };
  }
  url.searchParams.set('options', [url.searchParams.get('options'), mark].filter(Boolean).join(' '));
  return { connectionString: url.toString() };
}

export async function connectDatabase(target: DatabaseTarget, options: ConnectOptions = {}): Promise<DatabaseHandle> {
  if (target.kind === 'postgres') {
    // Loaded here, not at the top: a process on the embedded database never reads pg (about 40 ms
    // of its start).
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      // Marks the service's own sessions: the money-row digests record whether a write came from one
      // (migrations/028_money_row_digests.sql), so a write from any other session is named by
      // `plainpay audit verify`.
      ...markedAsService(target.url),
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // A server that vanished without closing its sockets is noticed on idle connections too.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID
            ? (value: string) => BigInt(value)
            : oid === JSON_OID
              ? parseStoredJson
              : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    const outage = outageReporter(options.logger);
    // A restart of Postgres ends every session with 57P01: an idle client reports it on the pool,
    // a checked-out one on itself. An 'error' event nobody listens to kills the process, so both
    // have a listener; the error also reaches the query it interrupted, which answers 503.
    pool.on('error', (error) => outage.lost(error));
    pool.on('connect', (client) => {
      client.on('error', (error) => outage.lost(error));
      if (target.preparedStatements !== false) prepareMarkedStatements(client);
      outage.regained();
    });
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: {
          connect: () =>
            pool.connect().catch((error: unknown) => {
              // The wait for a free client timing out is load, not an outage (still a 503).
              if (isConnectionFailure(error) && !isPoolWaitTimeout(error)) outage.lost(error);
              throw error;
            }),
          end: () => pool.end(),
        },
      }),
    });
    const notifications = postgresNotifications(target.url, options.logger);
    return {
      db,
      kind: 'postgres',
      notifications,
      async close() {
        await notifications.close();
        await db.destroy();
      },
    };
  }

  const dataDir = resolve(target.dataDir);
  mkdirSync(dirname(dataDir), { recursive: true });
  const releaseLock = acquireDataDirLock(dataDir);
  try {
    prepareDataDir(dataDir, options.progress);
    // Before PGlite compiles its module, so that its start is already judged by the larger budget.
    setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
    const pglite = await PGlite.create({
      dataDir,
      // 32 MB of buffer cache instead of PGlite's 128 MB: it lives in the wasm heap, which never
      // shrinks (about 110 MB less resident at rest; the kernel caches the files as well).
      startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'],
      parsers: { [INT8_OID]: (value: string) => BigInt(value), [JSON_OID]: parseStoredJson },
    });
    await pglite.exec(`set ${SERVICE_SESSION.name} = '${SERVICE_SESSION.value}'`);
    const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
    const notifications = pgliteNotifications(pglite, db);
    return {
      db,
      kind: 'pglite',
      notifications,
      async close() {
        await notifications.close();
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

/**
 * A data directory that does not exist yet gets the pre-migrated image when there is a usable one
 * (a copy: milliseconds); otherwise, or if the copy fails, PGlite runs initdb in it (seconds). An
 * existing directory with no database in it (a mount point, a first start killed during initdb)
 * is left to PGlite, as it always was. The caller holds its lock.
 */
function prepareDataDir(dataDir: string, progress: ConnectOptions['progress']): void {
  if (existsSync(join(dataDir, 'PG_VERSION'))) {
    progress?.(`Opening the embedded database ${dataDir}…`);
    return;
  }
  const image = existsSync(dataDir) ? undefined : usableDatabaseImage();
  if (image) {
    progress?.(`Creating the embedded database ${dataDir} from the pre-migrated image…`);
    try {
      restoreDatabaseImage(image, dataDir);
      return;
    } catch (error) {
      progress?.(`The pre-migrated image could not be copied (${(error as Error).message}); running initdb instead…`);
      return;
    }
  }
  progress?.(
    `Creating the embedded database ${dataDir} (initdb, a few seconds: no pre-migrated image, see \`npm run build\`)…`,
  );
}

/**
 * One warning when the connection to Postgres is lost (however many pooled clients report it) and
 * one line when a new connection succeeds again. In between, requests answer 503 (toAppError) and
 * workers back off (worker-job.ts); nothing needs a restart, because the pool drops broken clients
 * and connects new ones on demand.
 */
function outageReporter(logger: ConnectOptions['logger']): { lost(error: unknown): void; regained(): void } {
  let since: number | undefined;
  return {
    lost(error) {
      if (since !== undefined) return;
      since = Date.now();
      outages += 1;
      logger?.warn(
        { err: error },
        'database connection lost: requests answer 503 and workers back off until it is reachable again',
      );
    },
    regained() {
      if (since === undefined) return;
      const downMs = Date.now() - since;
      since = undefined;
      outages -= 1;
      logger?.info({ downMs }, 'database reachable again');
    },
  };
}

/** Databases of this process whose connection is lost now (each reported once, above). */
let outages = 0;

/**
 * True while a database of this process is unreachable: a request failing for that reason needs
 * no log line of its own (the outage has one). A dependency failing while the database answers
 * (a chain node, a provider, a wrong URL) is not covered, and is logged where it is answered.
 */
export function isDatabaseUnreachable(): boolean {
  return outages > 0;
}

/** pg-pool's error when every client stayed busy for CONNECT_TIMEOUT_MS. */
function isPoolWaitTimeout(error: unknown): boolean {
  return (error as Error | undefined)?.message === 'timeout exceeded when trying to connect';
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
