import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { markLateSuccessRefunded } from '../../src/db/money-writes/payment-attempts.ts';
import { recordRailEvent } from '../../src/db/repositories/rail-events.ts';
import { PROVIDER_RAIL_NAMES } from '../../src/db/tables/rails.ts';

/**
 * A late success (a payer's money the provider took after the payment had ended, docs/rails.md,
 * "Late successes") refunded on its rail: the rails worker asked the provider to refund it (or
 * found the refund it had asked for before), and this records it, with the rail event finance
 * reads, in the payment's action log. A compare-and-set from `due`: of two workers that both
 * refunded, one records it (recorded: false tells the other).
 */
export const recordLateSuccessRefund = defineTool({
  name: 'record_late_success_refund',
  title: "Record a late success's refund",
  description: 'Records that a late success on a payer rail was refunded to the payer by its provider.',
  input: z.strictObject({
    payment_id: z.string().min(1).max(100).describe('The payment the attempt was for.'),
    attempt_id: z.string().min(1).max(100).describe('The attempt whose late success was refunded.'),
    rail: z.enum(PROVIDER_RAIL_NAMES).describe('The payer rail that refunded it.'),
    refund_reference: z.string().min(1).max(200).describe("The provider's id of the refund."),
  }),
  output: z.object({
    attempt_id: z.string().describe('The attempt.'),
    recorded: z.boolean().describe('Whether this run recorded the refund (false: another had, or none was due).'),
  }),
  effect: 'write',
  scope: 'payments:write',
  system: {},
  async handler(input, { db, actor, now }) {
    const recorded = await markLateSuccessRefunded(db, input.attempt_id, actor);
    if (recorded) {
      const attempt = { id: input.attempt_id, payment_id: input.payment_id };
      const detail = `Paystack refund ${input.refund_reference} of the whole amount`;
      await recordRailEvent(db, input.rail, attempt, 'refund', 'refunded', detail, now);
    }
    return { attempt_id: input.attempt_id, recorded };
  },
});
