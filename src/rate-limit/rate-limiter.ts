/**
 * Per-key request counting in fixed one-second windows. In-process by default; Redis when
 * REDIS_URL is set, so that every instance counts against the same budget (redis-rate-limiter.ts,
 * loaded only then: ioredis is 40 modules that a start without Redis need not read).
 */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
}

export interface RateLimiter {
  /** Counts one request of `bucket`; in-process the decision comes at once, without a promise. */
  hit(bucket: string, now: number): RateLimitDecision | Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export const WINDOW_MS = 1000;

export function decide(count: number, limit: number, now: number): RateLimitDecision {
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
    hit(bucket, now) {
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
