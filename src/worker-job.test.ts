// A polling job while the database is down: it backs off instead of failing every tick, says so
// once per outage (not once per pass), and resumes on its own when a pass succeeds again. A failure
// that is not an outage is still an error line each time.

import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './core/logger.ts';
import type { Runtime } from './runtime.ts';
import { MAX_BACKOFF_MS, passFailures, pollingJob, wakeOnNotifications, wakeup } from './worker-job.ts';

function capturedLogger() {
  const lines: Array<{ level: number; msg: string; retryInMs?: number }> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('debug', sink), lines };
}

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** Resolves when `check` holds, polling every 5 ms; a generous ceiling instead of a timing assertion. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('pollingJob during a database outage', () => {
  it('5 passes that cannot reach the database: one warning, one "resumed" line, and it keeps running', async () => {
    const { logger, lines } = capturedLogger();
    let passes = 0;
    const job = pollingJob('test', 1, async () => {
      passes += 1;
      if (passes <= 5) throw refused();
    });
    const stop = job({ logger } as unknown as Runtime);
    await until(() => passes >= 8);
    await stop();

    const warnings = lines.filter((l) => l.level === 40);
    const errors = lines.filter((l) => l.level >= 50);
    const resumed = lines.filter((l) => l.msg === 'test job resumed');
    expect(errors).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/cannot be reached/);
    expect(resumed).toHaveLength(1);
  });

  it('other failures are logged as errors, each time', async () => {
    const { logger, lines } = capturedLogger();
    let passes = 0;
    const job = pollingJob('test', 1, async () => {
      passes += 1;
      if (passes <= 3) throw new Error('a bug');
    });
    const stop = job({ logger } as unknown as Runtime);
    await until(() => passes >= 4);
    await stop();
    expect(lines.filter((l) => l.level >= 50)).toHaveLength(3);
    expect(lines.filter((l) => l.level === 40)).toEqual([]);
  });
});

describe('passFailures: the wait after each failure in a row', () => {
  it('doubles from 2 × the poll interval to a cap, and starts over after a success', () => {
    const { logger } = capturedLogger();
    const failures = passFailures('test', 1_000, logger);
    const waits = Array.from({ length: 6 }, () => failures.failed(refused()));
    expect(waits).toEqual([2_000, 4_000, 8_000, MAX_BACKOFF_MS, MAX_BACKOFF_MS, MAX_BACKOFF_MS]);
    failures.succeeded();
    expect(failures.failed(refused())).toBe(2_000);
  });

  it('a job that polls less often than the cap waits at least its own interval', () => {
    const { logger } = capturedLogger();
    const failures = passFailures('test', 30_000, logger);
    expect(failures.failed(refused())).toBe(30_000);
  });
});

describe('waking a sleeping job', () => {
  /** A runtime whose notifications are delivered by hand. */
  function notifyingRuntime() {
    const listeners = new Map<string, Array<(payload: string) => void>>();
    const runtime = {
      logger: capturedLogger().logger,
      notifications: {
        async listen(channel: string, onNotify: (payload: string) => void) {
          listeners.set(channel, [...(listeners.get(channel) ?? []), onNotify]);
          return async () => {};
        },
        async close() {},
      },
    } as unknown as Runtime;
    const notify = (channel: string, payload: string): void => {
      for (const onNotify of listeners.get(channel) ?? []) onNotify(payload);
    };
    return { runtime, notify, listening: () => listeners.size > 0 };
  }

  it('a 10-minute sleep ends at once on a matching notification, and on the reconnect payload', async () => {
    const { runtime, notify, listening } = notifyingRuntime();
    const sleeper = wakeup();
    const woken: string[] = [];
    const unlisten = wakeOnNotifications(
      runtime,
      'test',
      [{ channel: 'plainpay_events', accepts: (payload) => payload.startsWith('payment.paid ') }],
      () => {
        woken.push('wake');
        sleeper.wake();
      },
    );
    await until(listening);
    notify('plainpay_events', 'payment.expired pay_1');
    expect(woken).toEqual([]);
    let slept = false;
    const sleeping = sleeper.sleep(600_000).then(() => {
      slept = true;
    });
    notify('plainpay_events', 'payment.paid pay_2');
    await until(() => slept);
    await sleeping;
    // After a lost LISTEN connection comes back ('') a job always looks: notifications were missed.
    notify('plainpay_events', '');
    expect(woken).toEqual(['wake', 'wake']);
    await unlisten();
  });

  it('a wake while no one sleeps is kept: the next sleep returns at once', async () => {
    const sleeper = wakeup();
    sleeper.wake();
    let slept = false;
    void sleeper.sleep(600_000).then(() => {
      slept = true;
    });
    await until(() => slept);
  });

  it('the wait a pass returns replaces the poll interval', async () => {
    let passes = 0;
    const job = pollingJob('test', 600_000, async () => {
      passes += 1;
      return 1;
    });
    const stop = job({ logger: capturedLogger().logger } as unknown as Runtime);
    await until(() => passes >= 3);
    await stop();
  });
});
