import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { markLateSuccessRefunded } from '../../src/db/money-writes/payment-attempts.ts';
import { recordRailEvent } from '../../src/db/repositories/rail-events.ts';
import type { RailName } from '../../src/db/tables/rails.ts';

/** How a rail event names the provider that refunded (as the dashboard's rails screen does). */
const RAIL_WORDS: Record<string, string> = { paystack: 'Paystack', mpesa: 'M-Pesa' };

/**
 * A late success (a payer's money the provider took after the payment had ended, docs/rails.md,
 * "Late successes") refunded on its rail: the rails worker asked the provider to refund it (or
 * found the refund it had asked for before), and this records it, with the rail event finance
 * reads, in the payment's action log. A compare-and-set from `due`: of two workers that both
 * refunded, one records it (recorded: false tells the other). The payment and rail its rail event
 * names are the attempt's own, read from the row it changed: never taken from the caller.
 */
export const recordLateSuccessRefund = defineTool({
  name: 'record_late_success_refund',
  title: "Record a late success's refund",
  description: 'Records that a late success on a payer rail was refunded to the payer by its provider.',
  input: z.strictObject({
    attempt_id: z.string().min(1).max(100).describe('The attempt whose late success was refunded.'),
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
    const refunded = await markLateSuccessRefunded(db, input.attempt_id, actor);
    if (refunded) {
      const attempt = { id: input.attempt_id, payment_id: refunded.payment_id };
      const provider = RAIL_WORDS[refunded.rail] ?? refunded.rail;
      const detail = `${provider} refund ${input.refund_reference} of the whole amount`;
      await recordRailEvent(db, refunded.rail as RailName, attempt, 'refund', 'refunded', detail, now);
    }
    return { attempt_id: input.attempt_id, recorded: refunded !== undefined };
  },
});
