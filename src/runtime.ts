import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import { type ChainConnection, connectChain } from './chain/chain.ts';
import type { Config } from './config/config.ts';
import { loadMasterKey } from './config/master-key.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { createLogger, type Logger } from './core/logger.ts';
import { createSecretBox, type SecretBox } from './core/secret-box.ts';
import { connectDatabase, type DatabaseHandle } from './db/connect.ts';
import type { Database } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { type Notifications, noNotifications } from './db/notifications.ts';
import { loadRatesFile, type RateTable, SANDBOX_RATES } from './domain/fx.ts';
import { createMemoryRateLimiter, type RateLimiter } from './rate-limit/rate-limiter.ts';

/**
 * Everything a role (API host, checkout host, workers) needs, built once from Config.
 * Composition roots (the CLI, tests) create it; nothing below reads the environment.
 */
export interface Runtime {
  config: Config;
  db: Kysely<Database>;
  dbKind: 'postgres' | 'pglite';
  /** LISTEN/NOTIFY on db: wake on a change instead of polling for it (db/notifications.ts). */
  notifications: Notifications;
  logger: Logger;
  clock: Clock;
  rateLimiter: RateLimiter;
  secretBox: SecretBox;
  /** FX rates for quotes: the sandbox table, or FX_RATES_FILE. */
  rates: RateTable;
  /** The chain, connected on first use (the embedded devnet starts then). */
  chain(): Promise<ChainConnection>;
  close(): Promise<void>;
}

export interface RuntimeOverrides {
  /** An already-open database (tests share one per worker); not closed by runtime.close(). */
  database?: Pick<DatabaseHandle, 'db' | 'kind'> & Partial<Pick<DatabaseHandle, 'notifications'>>;
  logger?: Logger;
  clock?: Clock;
  rateLimiter?: RateLimiter;
  /** Skip migrations (the caller applied them). */
  migrate?: boolean;
  /** A chain connection to use instead of connecting from config; not closed by runtime.close(). */
  chain?: ChainConnection;
  /** Told, one line each, before a start-up step that can take seconds (serve prints them). */
  progress?: (line: string) => void;
}

export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const owned = overrides.database
    ? undefined
    : await connectDatabase(config.database, { logger, progress: overrides.progress });
  const database = overrides.database ?? owned!;
  try {
    if (overrides.migrate !== false) {
      const applied = await migrateToLatest(database.db, undefined, { progress: overrides.progress });
      // The count and the newest: the list of names is in the database (and in the progress line).
      if (applied.length > 0)
        logger.info({ count: applied.length, latest: applied.at(-1) }, 'database migrations applied');
    }
    const rates = loadRates(config);
    const secretBox = createSecretBox(loadMasterKey(config));
    // Last of what can fail: a Redis client made before a failure would keep reconnecting, and
    // the process that could not start would never exit.
    const rateLimiter =
      overrides.rateLimiter ??
      (config.rateLimit.redisUrl
        ? (await import('./rate-limit/redis-rate-limiter.ts')).createRedisRateLimiter(
            config.rateLimit.perSecond,
            config.rateLimit.redisUrl,
            { logger },
          )
        : createMemoryRateLimiter(config.rateLimit.perSecond));
    let chain: Promise<ChainConnection> | undefined = overrides.chain ? Promise.resolve(overrides.chain) : undefined;
    const ownsChain = !overrides.chain;
    return {
      config,
      rates,
      chain() {
        if (!chain) {
          const connecting = connectChain({
            confirmations: config.chain.confirmations,
            ...dropUndefined(config.chain),
          });
          chain = connecting;
          // A failed connect (node down at boot) is not cached: the next call tries again, so a worker
          // recovers when the node comes back instead of failing until it is restarted.
          connecting.catch(() => {
            if (chain === connecting) chain = undefined;
          });
        }
        return chain;
      },
      db: database.db,
      dbKind: database.kind,
      notifications: database.notifications ?? noNotifications,
      logger,
      clock: overrides.clock ?? systemClock,
      rateLimiter,
      secretBox,
      async close() {
        await rateLimiter.close();
        if (chain && ownsChain) await (await chain.catch(() => undefined))?.close();
        await owned?.close();
      },
    };
  } catch (error) {
    await owned?.close();
    throw error;
  }
}

function loadRates(config: Config): RateTable {
  if (!config.fxRatesFile) return SANDBOX_RATES;
  const loaded = loadRatesFile(JSON.parse(readFileSync(config.fxRatesFile, 'utf8')));
  if (!loaded.ok)
    throw new Error(`FX_RATES_FILE ${config.fxRatesFile} is invalid:\n  - ${loaded.issues.join('\n  - ')}`);
  return loaded.table;
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
