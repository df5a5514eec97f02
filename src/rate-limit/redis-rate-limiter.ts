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
  /** Longest a count waits for Redis before this request is counted in-process instead. */
  commandTimeoutMs?: number;
  /** After a failed or timed-out count, how long requests are counted in-process before Redis is tried again. */
  retryAfterFailureMs?: number;
}

/**
 * Counts in Redis while it answers; while it does not (down, refusing, or too slow), counts in this
 * process, so that a request is never held up or failed by the counter: each instance then enforces
 * the limit alone (N instances allow up to N × the limit per key). Nothing is queued for Redis and
 * no command is retried: a count that fails is made in-process at once. ioredis keeps reconnecting in
 * the background, and counting returns to Redis as soon as it is ready. One warning per outage, one
 * line when it ends, and the metrics plainpay_rate_limit_degraded / _fallback_decisions_total.
 */
export function createRedisRateLimiter(limit: number, url: string, options: RedisRateLimiterOptions = {}): RateLimiter {
  const { logger } = options;
  const commandTimeoutMs = options.commandTimeoutMs ?? 500;
  const retryAfterFailureMs = options.retryAfterFailureMs ?? 1_000;
  const redis = new Redis(url, {
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
  const local = createMemoryRateLimiter(limit);
  /** When the outage began (Date.now()); undefined while Redis answers. */
  let downSince: number | undefined;
  /** After a failed count, no command is sent to Redis before this time (Date.now()). */
  let skipUntil = 0;
  let closed = false;

  const lost = (error: unknown): void => {
    if (closed || downSince !== undefined) return;
    downSince = Date.now();
    rateLimitFallback.started();
    logger?.warn(
      { err: error },
      'Redis unreachable: rate limits are counted in this process until it returns (each instance enforces the limit alone)',
    );
  };
  const regained = (): void => {
    if (downSince === undefined) return;
    const downMs = Date.now() - downSince;
    downSince = undefined;
    skipUntil = 0;
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

  const counted = async (bucket: string, now: number): Promise<RateLimitDecision> => {
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
  };

  return {
    async hit(bucket, now) {
      // Not connected yet, reconnecting, or backing off after a failed count: in-process.
      if (redis.status === 'ready' && Date.now() >= skipUntil) {
        try {
          const decision = await counted(bucket, now);
          regained();
          return decision;
        } catch (error) {
          skipUntil = Date.now() + retryAfterFailureMs;
          lost(error);
        }
      }
      rateLimitFallback.counted();
      return local.hit(bucket, now);
    },
    async close() {
      closed = true;
      if (downSince !== undefined) rateLimitFallback.ended();
      if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    },
  };
}
