import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { createRedisRateLimiter } from '../src/rate-limit/rate-limiter.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime } from './support/harness.ts';

async function burst(useRedis: boolean) {
  // A fixed clock keeps all 200 requests inside one one-second window, whatever the machine's speed.
  const clock = new ManualClock(new Date('2026-01-01T00:00:00.250Z'));
  const runtime = await testRuntime(
    { RATE_LIMIT_PER_SECOND: '50' },
    {
      clock,
      ...(useRedis ? { rateLimiter: createRedisRateLimiter(50, process.env.REDIS_URL!) } : {}),
    },
  );
  const app = await testApp(runtime);
  const merchant = await testAccount(runtime);
  const second = await extraKey(runtime, merchant.accountId);
  const responses = await Promise.all(
    Array.from({ length: 200 }, () => app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) })),
  );
  const other = await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(second) });
  return { responses, other };
}

describe.each([
  ['in-process store', false],
  // The Redis store is exercised when a Redis is configured (CI sets REDIS_URL).
  ...(process.env.REDIS_URL ? [['Redis store', true] as [string, boolean]] : []),
])('rate limits per key (%s)', (_name, useRedis) => {
  it('200 requests in one second with a limit of 50 → 150 are 429 with the headers; another key is not limited', async () => {
    const { responses, other } = await burst(useRedis);
    const ok = responses.filter((r) => r.statusCode === 200);
    const limited = responses.filter((r) => r.statusCode === 429);
    expect(ok).toHaveLength(50);
    expect(limited).toHaveLength(150);
    const sample = limited[0]!;
    expect(sample.json().error.type).toBe('rate_limit_error');
    expect(sample.headers['retry-after']).toBe('1');
    expect(sample.headers['ratelimit-policy']).toBe('"per-key";q=50;w=1');
    expect(sample.headers['ratelimit']).toBe('"per-key";r=0;t=1');
    expect(ok[0]!.headers['ratelimit']).toMatch(/^"per-key";r=\d+;t=1$/);
    expect(other.statusCode).toBe(200);
  });
});
