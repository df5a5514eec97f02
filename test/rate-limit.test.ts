import { createServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { createLogger } from '../src/core/logger.ts';
import type { RateLimiter } from '../src/rate-limit/rate-limiter.ts';
import { createRedisRateLimiter } from '../src/rate-limit/redis-rate-limiter.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime } from './support/harness.ts';

const METRICS_TOKEN = 'rate-limit-test-token-0123456789';

async function burst(limiter?: RateLimiter) {
  // A fixed clock keeps all 200 requests inside one one-second window, whatever the machine's speed.
  const clock = new ManualClock(new Date('2026-01-01T00:00:00.250Z'));
  const runtime = await testRuntime(
    { RATE_LIMIT_PER_SECOND: '50', METRICS_TOKEN },
    { clock, ...(limiter ? { rateLimiter: limiter } : {}) },
  );
  const app = await testApp(runtime);
  const merchant = await testAccount(runtime);
  const second = await extraKey(runtime, merchant.accountId);
  const responses = await Promise.all(
    Array.from({ length: 200 }, () => app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) })),
  );
  const other = await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(second) });
  const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
  return { responses, other, metrics: metrics.body };
}

/** A Redis URL nothing answers at: a port that was free a moment ago. */
async function unreachableRedisUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `redis://127.0.0.1:${port}`;
}

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

describe.each([
  ['in-process store', 'memory'],
  // The Redis store is exercised when a Redis is configured (CI sets REDIS_URL).
  ...(process.env.REDIS_URL ? [['Redis store', 'redis'] as [string, string]] : []),
  // Redis configured but unreachable: counted in-process, same answers (docs/operations.md).
  ['Redis store, Redis unreachable', 'unreachable'],
])('rate limits per key (%s)', (_name, store) => {
  it('200 requests in one second with a limit of 50 → 150 are 429 with the headers; another key is not limited', async () => {
    const limiter =
      store === 'redis'
        ? createRedisRateLimiter(50, process.env.REDIS_URL!)
        : store === 'unreachable'
          ? createRedisRateLimiter(50, await unreachableRedisUrl())
          : undefined;
    const { responses, other, metrics } = await burst(limiter);
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
    if (store === 'unreachable') {
      // Every one of the 201 requests was counted in-process.
      const fallback = /^plainpay_rate_limit_fallback_decisions_total (\d+)$/m.exec(metrics);
      expect(Number(fallback?.[1])).toBeGreaterThanOrEqual(201);
    }
  });
});

describe('the Redis rate limiter while Redis is unreachable', () => {
  it('decides at once in-process, with the limit; one warning however many reconnects fail', async () => {
    const { logger, lines } = capturedLogger();
    const limiter = createRedisRateLimiter(5, await unreachableRedisUrl(), { logger });
    try {
      const now = Date.parse('2026-01-01T00:00:00.250Z');
      const first = await Promise.all(Array.from({ length: 8 }, () => limiter.hit('key_a', now)));
      expect(first.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false, false]);
      expect(first.at(-1)).toEqual({ allowed: false, limit: 5, remaining: 0, resetSeconds: 1 });
      // Another key and the next window have budgets of their own.
      expect((await limiter.hit('key_b', now)).allowed).toBe(true);
      expect((await limiter.hit('key_a', now + 1_000)).remaining).toBe(4);

      // ioredis keeps reconnecting (every 100 ms, then more slowly): give it several failed attempts.
      const deadline = Date.now() + 10_000;
      while (!lines.some((l) => l.level === 40) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await limiter.hit('key_a', now + 2_000);
      const warnings = lines.filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toMatch(/Redis unreachable or slow: rate limits are counted in this process/);
    } finally {
      await limiter.close();
    }
  });
});

/**
 * Just enough of a Redis for the limiter (the ready check's INFO, MULTI/INCR/PEXPIRE/EXEC, PING)
 * that can freeze as a SIGSTOPped one does: the connection stays open, commands arrive and no answer
 * leaves until it thaws. It counts what it was sent.
 */
async function freezableRedis() {
  const sent: string[] = [];
  const held: Array<() => void> = [];
  let frozen = false;
  let count = 0;
  const answer = (socket: Socket, command: string): string => {
    switch (command) {
      case 'INFO': {
        const info = '# Persistence\r\nloading:0\r\n';
        return `$${info.length}\r\n${info}\r\n`;
      }
      case 'PING':
        return '+PONG\r\n';
      case 'MULTI':
        return '+OK\r\n';
      case 'EXEC':
        count++;
        return `*2\r\n:${count}\r\n:1\r\n`;
      case 'QUIT':
        socket.end();
        return '+OK\r\n';
      default:
        return '+QUEUED\r\n';
    }
  };
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      // Each command is an array of bulk strings: *N, then $len and the argument N times.
      for (;;) {
        const lines = buffer.split('\r\n');
        const n = Number(lines[0]?.slice(1));
        if (!lines[0]?.startsWith('*') || lines.length < 1 + 2 * n + 1) return;
        const command = lines[2]!.toUpperCase();
        buffer = lines.slice(1 + 2 * n).join('\r\n');
        sent.push(command);
        const reply = () => socket.write(answer(socket, command));
        if (frozen) held.push(reply);
        else reply();
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    sent,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const reply of held.splice(0)) reply();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the Redis rate limiter while Redis is frozen', () => {
  it('counts in-process at once after the first slow count; one probe at a time finds Redis back', async () => {
    const redis = await freezableRedis();
    // A command timeout longer than the test: any request that waited for a frozen Redis's answer
    // would never be decided, and neither would the test.
    const limiter = createRedisRateLimiter(1_000, redis.url, { commandTimeoutMs: 600_000, probeEveryMs: 20 });
    const until = async (what: () => boolean): Promise<void> => {
      while (!what()) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const counts = () => redis.sent.filter((c) => c === 'EXEC').length;
    const probes = () => redis.sent.filter((c) => c === 'PING').length;
    try {
      const now = Date.parse('2026-01-01T00:00:00.250Z');
      // Ready: counted in Redis.
      await until(() => {
        void limiter.hit('key_a', now);
        return counts() > 0;
      });
      // Answered in order: once this one is, none of those above is still waiting.
      await limiter.hit('key_a', now);

      redis.freeze();
      const sentAtFreeze = counts();
      // The first request finds Redis slow and is decided in-process; so is every one after it.
      expect((await limiter.hit('key_a', now)).allowed).toBe(true);
      for (let round = 0; round < 5; round++) {
        const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.hit('key_a', now)));
        expect(decisions.every((d) => d.allowed)).toBe(true);
      }
      // Probes go out as requests come in, one at a time, never in a request's way.
      await until(() => {
        void limiter.hit('key_a', now);
        return probes() >= 1;
      });
      for (let round = 0; round < 5; round++) {
        await Promise.all(Array.from({ length: 20 }, () => limiter.hit('key_a', now)));
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      // Frozen: one count was sent (the one that found it slow) and one probe, still unanswered.
      expect(counts() - sentAtFreeze).toBe(1);
      expect(probes()).toBe(1);

      // Thawed: the held answers come late (too slow to trust), a next probe answers quickly, and
      // counting returns to Redis.
      redis.thaw();
      await until(() => {
        void limiter.hit('key_a', now);
        return counts() - sentAtFreeze > 1;
      });
      expect(probes()).toBeGreaterThanOrEqual(2);
    } finally {
      await limiter.close();
      await redis.close();
    }
  });
});
