import type { PGlite } from '@electric-sql/pglite';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Logger } from '../core/logger.ts';
import type { Database } from './database.ts';

/**
 * Postgres LISTEN/NOTIFY channels the service uses to wake whoever waits for a change, instead of
 * polling for it. A notification is a hint, never the data: a listener re-reads the database, so a
 * lost or duplicated notification costs latency at most, never money. Sent by triggers (migration
 * 018) in the transaction that made the change, so it is delivered only if that change committed.
 */
export const NOTIFICATION_CHANNELS = {
  /** Every events row inserted; payload `<type> <object_id>` (payment.paid, payout.settled, …). */
  events: 'plainpay_events',
  /** An API key changed in a way that matters to auth (migration 021); payload the key's id. */
  apiKeys: 'plainpay_api_keys',
  /** A transfer was queued (migration 022): the settlement worker has work. Payload ''. */
  settlement: 'plainpay_settlement',
  /** A webhook delivery became due sooner (new, redelivered, retry brought forward; migration 022). Payload ''. */
  deliveries: 'plainpay_deliveries',
} as const;

export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[keyof typeof NOTIFICATION_CHANNELS];

export interface Notifications {
  /**
   * Calls onNotify with each notification's payload on `channel`. After a lost connection to
   * Postgres is regained, every listener is called once with payload '' (notifications sent
   * meanwhile are gone, so the listener should look for work). Resolves to an unsubscribe.
   */
  listen(channel: NotificationChannel, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Whether notifications are being heard right now. False while the Postgres listening connection
   * is down (those sent meanwhile are lost): a cache kept fresh by notifications must not be trusted then.
   */
  hearing(): boolean;
  close(): Promise<void>;
}

/** For a database opened by someone else without notifications (tests): nobody is ever woken. */
export const noNotifications: Notifications = {
  async listen() {
    return async () => {};
  },
  hearing: () => false,
  async close() {},
};

/**
 * PGlite is one session in this process, so its own LISTEN hears its NOTIFYs. The LISTEN goes
 * through the dialect's connection mutex: run between another holder's BEGIN and COMMIT, it would
 * join (and could roll back with) that transaction.
 */
export function pgliteNotifications(pglite: PGlite, db: Kysely<Database>): Notifications {
  const unsubscribes = new Set<() => Promise<void>>();
  return {
    async listen(channel, onNotify) {
      const unlisten = await db.connection().execute(() => pglite.listen(channel, onNotify));
      const unsubscribe = async (): Promise<void> => {
        if (!unsubscribes.delete(unsubscribe)) return;
        await db
          .connection()
          .execute(() => unlisten())
          .catch(() => {});
      };
      unsubscribes.add(unsubscribe);
      return unsubscribe;
    },
    // One session in this process: a NOTIFY is heard before the write that sent it returns.
    hearing: () => true,
    async close() {
      await Promise.all([...unsubscribes].map((u) => u()));
    },
  };
}

const RECONNECT_MAX_MS = 10_000;

/**
 * One dedicated client (outside the pool, which would hand a LISTENing session to other queries)
 * holds every LISTEN of this process. When it is lost it reconnects with backoff, LISTENs again and
 * tells every listener to look (payload ''), since notifications sent while it was away are lost.
 */
export function postgresNotifications(
  connectionString: string,
  logger?: Pick<Logger, 'warn' | 'debug'>,
): Notifications {
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const quote = (channel: string): string => `"${channel.replaceAll('"', '""')}"`;

  /**
   * Every LISTEN and UNLISTEN on the listening client, one at a time: the jobs of a worker listen
   * at once at start, and pg deprecates (and pg 9 refuses) a query on a client already executing one.
   */
  let queries: Promise<unknown> = Promise.resolve();
  const serially = (sql: string, on: () => pg.Client | undefined): Promise<unknown> => {
    const run = queries.then(() => on()?.query(sql));
    queries = run.catch(() => {});
    return run;
  };

  const connect = (): Promise<pg.Client> => {
    if (client) return Promise.resolve(client);
    connecting ??= (async () => {
      // Loaded here, not at the top: a process on the embedded database never reads pg.
      const { Client } = (await import('pg')).default;
      const fresh = new Client({ connectionString, keepAlive: true, connectionTimeoutMillis: 5_000 });
      fresh.on('error', () => lost(fresh));
      fresh.on('end', () => lost(fresh));
      fresh.on('notification', (message) => {
        for (const onNotify of listeners.get(message.channel) ?? []) onNotify(message.payload ?? '');
      });
      try {
        await fresh.connect();
        for (const channel of listeners.keys()) await fresh.query(`listen ${quote(channel)}`);
      } catch (error) {
        fresh.removeAllListeners('end');
        await fresh.end().catch(() => {});
        throw error;
      }
      client = fresh;
      const regained = failures > 0;
      failures = 0;
      if (regained) for (const set of listeners.values()) for (const onNotify of set) onNotify('');
      return fresh;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const lost = (which: pg.Client): void => {
    if (client !== which && client !== undefined) return;
    client = undefined;
    scheduleReconnect();
  };

  const scheduleReconnect = (): void => {
    if (closed || retryTimer || listeners.size === 0) return;
    failures += 1;
    const delay = Math.min(RECONNECT_MAX_MS, 250 * 2 ** Math.min(failures, 10));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().catch((error: unknown) => {
        logger?.debug({ err: error }, 'notification listener could not reconnect yet');
        scheduleReconnect();
      });
    }, delay);
    retryTimer.unref();
  };

  return {
    async listen(channel, onNotify) {
      let set = listeners.get(channel);
      const first = !set;
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
      }
      set.add(onNotify);
      try {
        const live = await connect();
        if (first) await serially(`listen ${quote(channel)}`, () => (client === live ? live : undefined));
      } catch (error) {
        // The database is unreachable now: the listener still counts, and is told ('') on reconnect.
        logger?.warn({ err: error, channel }, 'notification listener not connected yet; will retry');
        scheduleReconnect();
      }
      return async () => {
        const current = listeners.get(channel);
        if (!current?.delete(onNotify) || current.size > 0) return;
        listeners.delete(channel);
        await serially(`unlisten ${quote(channel)}`, () => client).catch(() => {});
      };
    },
    hearing: () => client !== undefined && !closed,
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      listeners.clear();
      const open = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      if (open) {
        open.removeAllListeners('end');
        await open.end().catch(() => {});
      }
    },
  };
}
