import { Redis } from 'ioredis';

/**
 * Per-key request counting in fixed one-second windows. In-process by default; Redis when
 * REDIS_URL is set, so that every instance counts against the same budget.
 */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
}

export interface RateLimiter {
  hit(bucket: string, now: number): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

const WINDOW_MS = 1000;

function decide(count: number, limit: number, now: number): RateLimitDecision {
  const resetMs = WINDOW_MS - (now % WINDOW_MS);
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
  };
}

export function createMemoryRateLimiter(limit: number): RateLimiter {
  let window = -1;
  let counts = new Map<string, number>();
  return {
    async hit(bucket, now) {
      const current = Math.floor(now / WINDOW_MS);
      if (current !== window) {
        // A new window: dropping the old map keeps memory bounded by the keys active in one second.
        window = current;
        counts = new Map();
      }
      const count = (counts.get(bucket) ?? 0) + 1;
      counts.set(bucket, count);
      return decide(count, limit, now);
    },
    async close() {},
  };
}

export function createRedisRateLimiter(limit: number, url: string): RateLimiter {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
  return {
    async hit(bucket, now) {
      const window = Math.floor(now / WINDOW_MS);
      const key = `plainpay:rl:${bucket}:${window}`;
      const result = await redis
        .multi()
        .incr(key)
        .pexpire(key, WINDOW_MS * 2)
        .exec();
      const count = Number(result?.[0]?.[1] ?? 1);
      return decide(count, limit, now);
    },
    async close() {
      await redis.quit();
    },
  };
}
