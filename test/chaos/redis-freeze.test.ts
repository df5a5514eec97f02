// Chaos: the Redis behind REDIS_URL freezes (SIGSTOP), then runs again (issue 33, item 7). A frozen
// Redis keeps its connections open and takes commands without answering, so a limiter that waits
// for it holds every request up. The API counts rate limits in a private redis-server of this
// file's own. Judged by state, not by time:
//   - once the freeze is found, no request waits on a Redis command: the requests-waiting gauge is
//     0 whenever it is read (also in the middle of bursts), each request is counted in-process (the
//     fallback counter grows by exactly the requests sent), at most one probe is in flight, and no
//     error is answered;
//   - once Redis runs again, a probe finds it and counting returns to it by itself.
// The latency before and during the freeze is printed as a figure, never asserted.

import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { bearer, testAccount, testApp, testRuntime } from '../support/harness.ts';
import { createRedisServer, type RedisServer, redisServerBinary } from './support/redis-server.ts';

const LIMIT = 1_000;
const BURST = 20;
const METRICS_TOKEN = 'chaos-redis-freeze-token-0123456789';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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

/** How many times the server ran each command (INFO commandstats), by command. */
async function commandCalls(server: RedisServer): Promise<Record<string, number>> {
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    const info = await client.info('commandstats');
    return Object.fromEntries([...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
  } finally {
    client.disconnect();
  }
}

interface LimiterMetrics {
  degraded: number;
  fallback: number;
  waits: number;
  probesInFlight: number;
  probes: number;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const skip = redisServerBinary() === undefined;
if (skip) console.warn('redis-freeze chaos test skipped: redis-server is not installed');

describe.skipIf(skip)('Redis freezes, then runs again', () => {
  it('no request waits on the frozen Redis (one probe at a time), and counting returns to it', async () => {
    const redis = await createRedisServer();
    cleanups.push(() => redis.destroy());
    await redis.start();

    const clock = new ManualClock(new Date('2026-01-01T00:00:00.250Z'));
    // The limit counts per window of the fake clock; the limiter's own waits are real time.
    const runtime = await testRuntime(
      { RATE_LIMIT_PER_SECOND: String(LIMIT), REDIS_URL: redis.url, METRICS_TOKEN },
      { clock },
    );
    const app = await testApp(runtime);
    const merchant = await testAccount(runtime);
    const { id: keyId } = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .executeTakeFirstOrThrow();

    const ping = () => app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) });
    const metrics = async (): Promise<LimiterMetrics> => {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
      const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(res.body)?.[1]);
      return {
        degraded: read('plainpay_rate_limit_degraded'),
        fallback: read('plainpay_rate_limit_fallback_decisions_total'),
        waits: read('plainpay_rate_limit_redis_waits'),
        probesInFlight: read('plainpay_rate_limit_probes_in_flight'),
        probes: read('plainpay_rate_limit_probes_total'),
      };
    };
    /** Times one request after another, in milliseconds: the figure printed, never judged. */
    const latencies = async (n: number): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const start = performance.now();
        expect((await ping()).statusCode).toBe(200);
        times.push(performance.now() - start);
      }
      return times;
    };
    const countingInRedis = async (): Promise<void> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        clock.advance(1_000);
        const key = `plainpay:rl:${keyId}:${Math.floor(clock.now().getTime() / 1_000)}`;
        expect((await ping()).statusCode).toBe(200);
        if ((await readCount(redis, key).catch(() => undefined)) === 1) return;
        if (Date.now() > deadline) throw new Error('counting never returned to Redis');
        await sleep(50);
      }
    };

    await countingInRedis();
    const before = await latencies(50);

    const callsBefore = await commandCalls(redis);
    redis.freeze();
    // The freeze is found by the request that first waits too long for Redis.
    const deadline = Date.now() + 30_000;
    let finding = 0;
    while ((await metrics()).degraded !== 1) {
      expect((await ping()).statusCode).toBe(200);
      finding++;
      if (Date.now() > deadline) throw new Error('the freeze was never noticed');
    }

    // Frozen: bursts of requests with the metrics read in their midst, a few seconds of real time
    // so that probes are due many times over.
    const samples: LimiterMetrics[] = [];
    const answers: number[] = [];
    const start = await metrics();
    let sent = 0;
    for (let round = 0; round < 10; round++) {
      const burst = Array.from({ length: BURST }, () => ping());
      sent += BURST;
      const [sample, ...rest] = await Promise.all([metrics(), ...burst]);
      samples.push(sample as LimiterMetrics);
      answers.push(...rest.map((r) => (r as Awaited<ReturnType<typeof ping>>).statusCode));
      samples.push(await metrics());
      await sleep(250);
    }
    const during = await latencies(50);
    sent += 50;
    const end = await metrics();

    expect(answers.filter((status) => status !== 200)).toEqual([]);
    expect(samples.map((s) => s.waits).filter((waits) => waits !== 0)).toEqual([]);
    expect(samples.map((s) => s.probesInFlight).filter((n) => n > 1)).toEqual([]);
    expect(end.probesInFlight).toBeLessThanOrEqual(1);
    // Every request was judged in-process, none by Redis; Redis was asked only by probes.
    expect(end.fallback - start.fallback).toBe(sent);
    expect(end.probes - start.probes).toBeGreaterThanOrEqual(1);
    expect(end.degraded).toBe(1);

    console.log(
      `Redis frozen: median request ${median(during).toFixed(2)} ms against ${median(before).toFixed(2)} ms before ` +
        `(ratio ${(median(during) / median(before)).toFixed(2)}); ${end.probes - start.probes} probes, never two at once`,
    );

    // Thawed, Redis runs what it was sent while frozen: a count (INCR) from each request that found
    // the freeze, none from the requests after it; probes (PING) only.
    redis.thaw();
    await commandCalls(redis);
    const callsAfter = await commandCalls(redis);
    expect((callsAfter.incr ?? 0) - (callsBefore.incr ?? 0)).toBeLessThanOrEqual(finding);
    expect((callsAfter.ping ?? 0) - (callsBefore.ping ?? 0)).toBe(end.probes - start.probes);

    await countingInRedis();
    expect((await metrics()).degraded).toBe(0);
  });
});
