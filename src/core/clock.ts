/** Time as the service sees it. Tests drive it (expiry, confirmation lifetimes, rotation grace). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock tests can move; it follows real time (plus the advances) unless given a fixed start or
 * frozen, for tests that compare times to the millisecond while real time keeps passing.
 */
export class ManualClock implements Clock {
  private offsetMs = 0;
  constructor(private fixed?: Date) {}
  now(): Date {
    return new Date((this.fixed?.getTime() ?? Date.now()) + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** Stops following real time at the current reading; returns a function that resumes it. */
  freeze(): () => void {
    const previous = this.fixed;
    this.fixed = this.now();
    this.offsetMs = 0;
    return () => {
      // Carry on from the frozen reading (plus any advances made while frozen) in real time.
      const reading = this.now().getTime();
      this.fixed = previous;
      this.offsetMs = reading - (previous?.getTime() ?? Date.now());
    };
  }
}
