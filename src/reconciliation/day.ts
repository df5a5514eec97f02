import { AppError } from '../core/errors.ts';

/** One UTC day, [from, to), as the reconciliation reads it. */
export interface DayWindow {
  /** YYYY-MM-DD. */
  day: string;
  from: Date;
  to: Date;
}

const DAY_MS = 86_400_000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC day a YYYY-MM-DD names; an AppError naming `param` for anything else. */
export function dayWindow(day: string, param = 'date'): DayWindow {
  const m = DAY.exec(day);
  const from = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
  if (!from || from.toISOString().slice(0, 10) !== day) {
    throw new AppError('invalid_request', `${param} must be a day as YYYY-MM-DD, like 2026-03-14.`, { param });
  }
  return { day, from, to: new Date(from.getTime() + DAY_MS) };
}

/** The UTC day before the one `now` is in: what the daily run reconciles. */
export function previousDay(now: Date): string {
  return new Date(now.getTime() - DAY_MS).toISOString().slice(0, 10);
}
