import { Redis } from 'ioredis';
import type { Logger } from '../core/logger.ts';
import { rateLimitFallback } from '../metrics/metrics.ts';
import {
  createMemoryRateLimiter,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  WINDOW_MS,
} from './rate-limiter.ts';

export interface RedisRateLimiterOptions {
  /** Where an outage of Redis and its end are reported, one line each. */
  logger?: Pick<Logger, 'warn' | 'info'>;
  /**
   * Longest a request waits for its count in Redis: past it, Redis is taken as down (slow or
   * frozen), this request and every one waiting with it are counted in-process at once, and no
   * further request asks Redis until a probe finds it quick again.
   */
  slowAfterMs?: number;
  /** How long a Redis command (a count or a probe) may take before ioredis fails it. */
  commandTimeoutMs?: number;
  /** While Redis is down, how often one probe asks it whether it answers again. */
  probeEveryMs?: number;
}

/**
 * Counts in Redis while it answers quickly; while it does not (down, refusing, slow or frozen),
 * counts in this process, so that a request is never held up or failed by the counter: each
 * instance then enforces the limit alone (N instances allow up to N × the limit per key). A request
 * waits for Redis at most slowAfterMs, and only while Redis is taken as up: once a count fails or
 * is slow, every request is counted in-process at once and a single probe at a time (PING, every
 * probeEveryMs, in the background) finds out when Redis answers quickly again. Nothing is queued for
 * Redis and no count is retried. ioredis keeps reconnecting in the background. One warning per
 * outage, one line when it ends, and the metrics plainpay_rate_limit_* (docs/operations.md).
 */
export function createRedisRateLimiter(limit: number, url: string, options: RedisRateLimiterOptions = {}): RateLimiter {
  const { logger } = options;
  const slowAfterMs = options.slowAfterMs ?? 100;
  const commandTimeoutMs = options.commandTimeoutMs ?? 500;
  const probeEveryMs = options.probeEveryMs ?? 1_000;
  const redis = connectForCounting(url, commandTimeoutMs);
  const local = createMemoryRateLimiter(limit);
  /** When the outage began (Date.now()); undefined while Redis answers. */
  let downSince: number | undefined;
  /** Settles when counting leaves Redis: the requests still waiting for Redis are counted in-process then. */
  let leftRedis = signal();
  let probing = false;
  let nextProbeAt = 0;
  let closed = false;

  const lost = (error: unknown): void => {
    if (closed || downSince !== undefined) return;
    downSince = Date.now();
    nextProbeAt = downSince + probeEveryMs;
    leftRedis.resolve();
    leftRedis = signal();
    rateLimitFallback.started();
    logger?.warn(
      { err: error },
      'Redis unreachable or slow: rate limits are counted in this process until it answers quickly again (each instance enforces the limit alone)',
    );
  };
  const regained = (): void => {
    if (downSince === undefined || closed) return;
    const downMs = Date.now() - downSince;
    downSince = undefined;
    rateLimitFallback.ended();
    logger?.info({ downMs }, 'Redis reachable again: rate limits are counted in Redis again');
  };

  // Listening to 'error' also keeps ioredis from printing "[ioredis] Unhandled error event" for
  // every reconnect attempt.
  redis.on('error', lost);
  redis.on('close', () => {
    if (!closed) lost(new Error('the connection to Redis closed'));
  });
  redis.on('ready', regained);

  /** One PING at a time, in the background: no request waits for it. A slow answer keeps counting in-process. */
  const probe = (): void => {
    if (probing || closed || redis.status !== 'ready' || Date.now() < nextProbeAt) return;
    probing = true;
    rateLimitFallback.probeStarted();
    const sent = Date.now();
    redis
      .ping()
      .then(
        () => {
          if (Date.now() - sent <= slowAfterMs) regained();
        },
        () => {},
      )
      .finally(() => {
        probing = false;
        nextProbeAt = Date.now() + probeEveryMs;
        rateLimitFallback.probeEnded();
      });
  };

  /** The count in Redis, or undefined when Redis failed, was too slow, or was given up meanwhile. */
  const countedInRedis = async (bucket: string, now: number): Promise<RateLimitDecision | undefined> => {
    const given = leftRedis.promise;
    const slow = setTimeout(
      () => lost(new Error(`Redis took more than ${slowAfterMs} ms to count a request`)),
      slowAfterMs,
    );
    rateLimitFallback.waiting(1);
    try {
      // A count that answers after it was given up may still land in Redis: one extra in a window
      // that is counted in-process anyway.
      return await Promise.race([countInRedis(redis, limit, bucket, now), given]);
    } catch (error) {
      lost(error);
      return undefined;
    } finally {
      clearTimeout(slow);
      rateLimitFallback.waiting(-1);
    }
  };

  return {
    async hit(bucket, now) {
      // Not connected yet or reconnecting: in-process, and ioredis's 'ready' brings counting back.
      if (redis.status === 'ready') {
        if (downSince === undefined) {
          const decision = await countedInRedis(bucket, now);
          if (decision) return decision;
        } else {
          probe();
        }
      }
      rateLimitFallback.counted();
      return local.hit(bucket, now);
    },
    async close() {
      closed = true;
      leftRedis.resolve();
      if (downSince !== undefined) rateLimitFallback.ended();
      // QUIT waits for an answer: not from a Redis that is down or frozen.
      if (redis.status === 'ready' && downSince === undefined) await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    },
  };
}

/** A client that fails fast and never queues or re-sends a count: a late count is worth nothing. */
function connectForCounting(url: string, commandTimeoutMs: number): Redis {
  return new Redis(url, {
    // Fail fast: a command while disconnected is refused at once rather than queued, and none is
    // re-sent after a reconnect (the window it counted for is over by then).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    // Keep trying for ever, at most every 2 s: counting moves back to Redis on its own.
    retryStrategy: (attempt) => Math.min(100 * attempt, 2_000),
  });
}

/** One request counted in its key's window, in one MULTI: the count, and its key's expiry. */
async function countInRedis(redis: Redis, limit: number, bucket: string, now: number): Promise<RateLimitDecision> {
  const window = Math.floor(now / WINDOW_MS);
  const key = `plainpay:rl:${bucket}:${window}`;
  const result = await redis
    .multi()
    .incr(key)
    .pexpire(key, WINDOW_MS * 2)
    .exec();
  // null: the transaction was aborted. Counted in-process then, never taken as a count of 1.
  if (!result?.[0]) throw new Error('the Redis transaction was aborted');
  const [error, count] = result[0];
  if (error) throw error;
  return decide(Number(count), limit, now);
}

/** A promise of undefined and the function that settles it. */
function signal(): { promise: Promise<undefined>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<undefined>((settle) => {
    resolve = () => settle(undefined);
  });
  return { promise, resolve };
}
