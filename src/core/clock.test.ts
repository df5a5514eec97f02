import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';

describe('ManualClock', () => {
  it('stands still while frozen, moves only by advance, and resumes from where it stood', async () => {
    const clock = new ManualClock();
    const resume = clock.freeze();
    const frozen = clock.now().getTime();
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.now().getTime()).toBe(frozen);
    clock.advance(5000);
    expect(clock.now().getTime()).toBe(frozen + 5000);
    resume();
    const resumed = clock.now().getTime();
    expect(resumed).toBeGreaterThanOrEqual(frozen + 5000);
    expect(resumed).toBeLessThan(frozen + 5000 + 1000);
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.now().getTime()).toBeGreaterThan(resumed);
  });
});
