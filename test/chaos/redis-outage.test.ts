// Chaos: the Redis behind REDIS_URL stops, then starts again, empty (issue 17, "Redis outages").
// The API counts rate limits in a private redis-server of this file's own. Judged:
//   - while Redis is down, authenticated requests still answer as without it: no 500, the
//     RateLimit headers on every answer, and the per-key limit still enforced (in-process);
//   - one warning for the outage however many reconnects fail, no "[ioredis] Unhandled error
//     event" lines, and plainpay_rate_limit_degraded says 1;
//   - once Redis is back, counting returns to it by itself (the window's key appears in Redis,
//     holding every request of that window), one line says so, and the gauge is back to 0.
// A fixed clock puts each burst inside one one-second window, whatever the machine's speed.

import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { createLogger } from '../../src/core/logger.ts';
import { bearer, testAccount, testApp, testRuntime } from '../support/harness.ts';
import { createRedisServer, type RedisServer, redisServerBinary } from './support/redis-server.ts';

const LIMIT = 5;
const BURST = 7;
const METRICS_TOKEN = 'chaos-redis-metrics-token-0123456789';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function capturedLogger() {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

/** The value of `key` in the private Redis, read by a short-lived client of the test's own. */
async function readCount(server: RedisServer, key: string): Promise<number | undefined> {
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    const value = await client.get(key);
    return value === null ? undefined : Number(value);
  } finally {
    client.disconnect();
  }
}

const skip = redisServerBinary() === undefined;
if (skip) console.warn('redis-outage chaos test skipped: redis-server is not installed');

describe.skipIf(skip)('Redis stops, then starts again', () => {
  it('rate limits fall back to the process (no 500, limits held, one warning) and return to Redis', async () => {
    const consoleErrors = vi.spyOn(console, 'error');
    cleanups.push(() => consoleErrors.mockRestore());
    const redis = await createRedisServer();
    cleanups.push(() => redis.destroy());
    await redis.start();

    const { logger, lines } = capturedLogger();
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.250Z'));
    const runtime = await testRuntime(
      { RATE_LIMIT_PER_SECOND: String(LIMIT), REDIS_URL: redis.url, METRICS_TOKEN },
      { clock, logger },
    );
    const app = await testApp(runtime);
    const merchant = await testAccount(runtime);
    const { id: keyId } = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .executeTakeFirstOrThrow();

    /** Moves the clock to the start of a fresh window and sends `n` requests at once in it. */
    const burst = async (n: number) => {
      clock.advance(1_000);
      const window = Math.floor(clock.now().getTime() / 1_000);
      const answers = await Promise.all(
        Array.from({ length: n }, () =>
          app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) }),
        ),
      );
      return { answers, key: `plainpay:rl:${keyId}:${window}` };
    };
    const expectLimited = (answers: Awaited<ReturnType<typeof burst>>['answers']) => {
      expect(answers.map((a) => a.statusCode).sort()).toEqual([
        ...Array<number>(LIMIT).fill(200),
        ...Array<number>(BURST - LIMIT).fill(429),
      ]);
      for (const answer of answers) {
        expect(answer.headers['ratelimit-policy']).toBe(`"per-key";q=${LIMIT};w=1`);
        expect(answer.headers['ratelimit']).toMatch(/^"per-key";r=\d+;t=1$/);
      }
      const limited = answers.find((a) => a.statusCode === 429)!;
      expect(limited.json().error.type).toBe('rate_limit_error');
      expect(limited.headers['retry-after']).toBe('1');
    };
    const degraded = async (): Promise<number> => {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
      return Number(/^plainpay_rate_limit_degraded (\S+)$/m.exec(res.body)?.[1]);
    };
    /** Waits (a generous ceiling) until a request's count lands in Redis. */
    const countingInRedis = async (): Promise<void> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const { answers, key } = await burst(1);
        expect(answers[0]!.statusCode).toBe(200);
        if ((await readCount(redis, key).catch(() => undefined)) === 1) return;
        if (Date.now() > deadline) throw new Error('counting never returned to Redis');
        await sleep(100);
      }
    };

    // Before: counted in Redis.
    await countingInRedis();
    const before = await burst(BURST);
    expectLimited(before.answers);
    expect(await readCount(redis, before.key)).toBe(BURST);
    expect(await degraded()).toBe(0);

    // Redis stops. Every burst still answers as before, counted in-process.
    await redis.stop();
    const during: Array<Awaited<ReturnType<typeof burst>>['answers']> = [];
    // About 3 s of real time: ioredis fails several reconnects meanwhile (every 100 ms, then slower).
    for (let i = 0; i < 10; i++) {
      during.push((await burst(BURST)).answers);
      await sleep(300);
    }
    for (const answers of during) expectLimited(answers);
    expect(during.flat().filter((a) => a.statusCode >= 500)).toEqual([]);
    expect(await degraded()).toBe(1);
    const outageWarnings = lines.filter((l) => l.level === 40 && /^Redis unreachable/.test(l.msg));
    expect(outageWarnings).toHaveLength(1);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(consoleErrors.mock.calls.filter((args) => String(args[0]).includes('[ioredis]'))).toEqual([]);

    // Redis starts again (empty): counting goes back to it without a restart of anything.
    await redis.start();
    await countingInRedis();
    const after = await burst(BURST);
    expectLimited(after.answers);
    expect(await readCount(redis, after.key)).toBe(BURST);
    expect(await degraded()).toBe(0);
    expect(lines.filter((l) => /^Redis reachable again/.test(l.msg))).toHaveLength(1);
    expect(lines.filter((l) => l.level === 40 && /^Redis unreachable/.test(l.msg))).toHaveLength(1);
  });
});
