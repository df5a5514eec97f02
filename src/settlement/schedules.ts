// Settlement schedules (docs/settlement.md, "Schedules"): when a paid payment's on-chain transfer
// goes out. `instant` sends it with the next batch (the adaptive window in batches.ts); `hourly` and
// `daily` hold it to the next window boundary after it was paid (UTC, epoch-aligned), so that
// everything owed to one address in the window nets into one line of one batch; `threshold` holds
// it until the transfers waiting for its address add up to the threshold, at the latest to the next
// daily boundary, so money is never held longer than a day.

import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { zodIssueToAppError } from '../core/validation.ts';
import type { SettlementSchedule } from '../db/database.ts';
import type { StoredSettlementSchedule } from '../db/repositories/settlement-schedules.ts';
import { formatMinor, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { SETTLEMENT_SCHEDULES } from '../domain/settlement-windows.ts';
import { limitAmount, limitAmountNumber, policyAmountToMinor } from '../policy/amounts.ts';

// ---------------------------------------------------------------------------------------------
// The account's schedule per mode: GET/PUT /v1/settlement_schedule.

export const SettlementScheduleSchema = z
  .strictObject({
    schedule: z
      .enum(SETTLEMENT_SCHEDULES, { error: `must be one of ${SETTLEMENT_SCHEDULES.join(', ')}` })
      .describe(
        'instant: settle with the next batch (seconds); hourly / daily: at the next UTC hour / midnight after the payment was paid; threshold: once what waits for a payout address reaches `threshold`, at the latest at the next UTC midnight.',
      ),
    threshold: limitAmount(
      `For threshold only (and required there): the amount of ${SETTLEMENT_CURRENCY.code} owed to one address, a number in major units, e.g. 250, that sends everything waiting for it.`,
    ).optional(),
  })
  .describe(
    "The account's settlement schedule for the key's mode: when a paid payment's on-chain transfer goes out. Applies to payments created from now on; a payment may choose its own at creation.",
  );

/** Validates a PUT body. Throws an invalid_request AppError naming the field. */
export function parseSettlementSchedule(raw: unknown): { schedule: SettlementSchedule; thresholdMinor: bigint | null } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AppError('invalid_request', 'The request body must be a JSON object with `schedule`.');
  }
  const result = SettlementScheduleSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw zodIssueToAppError(result.error.issues[0]!);
  const { schedule, threshold } = result.data;
  if (schedule !== 'threshold') {
    if (threshold != null) {
      throw new AppError('invalid_request', 'Invalid threshold: only the threshold schedule takes one.', {
        param: 'threshold',
      });
    }
    return { schedule, thresholdMinor: null };
  }
  const minor = threshold == null ? 0n : policyAmountToMinor(threshold);
  if (minor <= 0n) {
    throw new AppError(
      'invalid_request',
      `Invalid threshold: the threshold schedule needs an amount above 0, e.g. 250 (${SETTLEMENT_CURRENCY.code}).`,
      { param: 'threshold' },
    );
  }
  return { schedule, thresholdMinor: minor };
}

export function presentSettlementSchedule(stored: StoredSettlementSchedule, livemode: boolean) {
  return {
    object: 'settlement_schedule' as const,
    livemode,
    schedule: stored.schedule,
    threshold: stored.thresholdMinor === null ? null : limitAmountNumber(thresholdText(stored.thresholdMinor)),
    updated_at: stored.updatedAt?.toISOString() ?? null,
  };
}

/** 250000000n → "250", 1000500000n → "1000.5": the amount's digits, shown as the number 1000.5. */
function thresholdText(minor: bigint): string {
  return formatMinor(minor, SETTLEMENT_CURRENCY).replace(/\.?0+$/, '');
}
