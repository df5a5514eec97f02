// Settlement windows (docs/settlement.md, "Schedules"): when a paid payment's on-chain transfer is
// due. The rules alone, with no database: the worker, the system tools that take paid payments and
// the presenters that show `settlement_due_at` all read them; the account's stored schedule is
// src/settlement/schedules.ts.

import type { Config } from '../config/config.ts';
import type { PaymentRow, SettlementSchedule } from '../db/database.ts';

export const SETTLEMENT_SCHEDULES = [
  'instant',
  'hourly',
  'daily',
  'threshold',
] as const satisfies readonly SettlementSchedule[];

/** What a payment may ask for itself; `threshold` is about many payments, so it is the account's. */
export const PAYMENT_SETTLEMENT_SCHEDULES = ['instant', 'hourly', 'daily'] as const;

const HOURS_PER_DAY = 24;

/**
 * The end of the window a payment paid at `paidAt` waits for: the next boundary strictly after it
 * (hourly: a multiple of hourMs since the epoch, i.e. the next UTC hour; daily and threshold's cap:
 * the next UTC midnight). null for instant: no window.
 */
export function windowEnd(schedule: SettlementSchedule, paidAt: Date, hourMs: number): Date | null {
  if (schedule === 'instant') return null;
  const length = schedule === 'hourly' ? hourMs : hourMs * HOURS_PER_DAY;
  return new Date((Math.floor(paidAt.getTime() / length) + 1) * length);
}

/**
 * When a payment's settlement is due, as reads show it (`settlement_due_at`): what the worker
 * recorded when it took the payment; before that, for a paid payment, the end of its window (for
 * instant: when it was paid, i.e. at once). A threshold payment shows its daily cap until the
 * threshold is reached. null while unpaid.
 */
export function paymentSettlementDueAt(
  config: Config,
  row: Pick<PaymentRow, 'settlement_due_at' | 'settlement_schedule' | 'paid_at' | 'status'>,
): Date | null {
  if (row.settlement_due_at) return row.settlement_due_at;
  if (row.status !== 'paid' || !row.paid_at) return null;
  return windowEnd(row.settlement_schedule, row.paid_at, config.settlement.hourMs) ?? row.paid_at;
}
