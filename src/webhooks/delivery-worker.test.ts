import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, nextRetryDelayMs, RETRY_SCHEDULE_MS } from './delivery-worker.ts';

// The worker against a database and real receivers is tested in test/webhooks.delivery.test.ts.
describe('retry schedule', () => {
  it('is 10 attempts over about 3 days: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 20 h', () => {
    const minutes = RETRY_SCHEDULE_MS.map((ms) => ms / 60_000);
    expect(minutes).toEqual([5 / 60, 5, 30, 120, 300, 600, 840, 1200, 1200]);
    const hours = RETRY_SCHEDULE_MS.reduce((sum, ms) => sum + ms, 0) / 3_600_000;
    expect(hours).toBeGreaterThan(71);
    expect(hours).toBeLessThan(72);
  });

  it('jitters each wait by at most ±10 %', () => {
    expect(nextRetryDelayMs(1, { random: () => 0 })).toBe(4500);
    expect(nextRetryDelayMs(1, { random: () => 0.5 })).toBe(5000);
    expect(nextRetryDelayMs(1, { random: () => 0.999999 })).toBe(5500);
    for (let i = 0; i < 200; i++) {
      const wait = nextRetryDelayMs(4)!;
      expect(wait).toBeGreaterThanOrEqual(0.9 * 2 * 3_600_000);
      expect(wait).toBeLessThanOrEqual(1.1 * 2 * 3_600_000);
    }
  });

  it('ends after the 10th attempt', () => {
    expect(nextRetryDelayMs(9)).not.toBeNull();
    expect(nextRetryDelayMs(10)).toBeNull();
    expect(nextRetryDelayMs(2, { schedule: [10] })).toBeNull();
  });

  it('lets a longer Retry-After win, capped at 24 h, and never shortens the schedule', () => {
    expect(nextRetryDelayMs(1, { random: () => 0.5, retryAfterMs: 120_000 })).toBe(120_000);
    expect(nextRetryDelayMs(3, { random: () => 0.5, retryAfterMs: 1000 })).toBe(30 * 60_000);
    expect(nextRetryDelayMs(1, { random: () => 0.5, retryAfterMs: 365 * 86_400_000 })).toBe(MAX_RETRY_AFTER_MS);
    expect(nextRetryDelayMs(10, { retryAfterMs: 1000 })).toBeNull();
  });
});
