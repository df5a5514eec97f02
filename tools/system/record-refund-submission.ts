import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool } from '../../src/core/tool.ts';
import { recordRefundStep } from '../../src/db/money-writes/refunds.ts';

/**
 * The steps of sending a pending rail refund to its provider (docs/rails.md, "Refunds"), before its
 * outcome (record_refund_outcome):
 * - `sending`: about to ask the provider to refund; a compare-and-set on when it was last sent, so
 *   of two workers that read the same row only one sends (sent: false tells the other to stop).
 * - `accepted`: the provider took it, under this reference, which its status is asked by from now on.
 * - `provider_status`: the provider's own word for where it stands (Paystack's pending, processing,
 *   needs-attention, …), shown to finance; only while it is pending here.
 * None moves money: the refund's money left the balance when it was created.
 */
export const recordRefundSubmission = defineTool({
  name: 'record_refund_submission',
  title: 'Record a rail refund sent to its provider',
  description:
    'Records that a pending refund is being sent to its payer rail, that the rail accepted it, or where the rail says it stands.',
  input: z.strictObject({
    refund_id: z.string().min(1).max(100),
    step: z.enum(['sending', 'accepted', 'provider_status']),
    /** For `sending`: when it was last sent as this worker read it (null: never), the compare-and-set. */
    last_sent_at: z.iso.datetime().nullable().optional(),
    /** For `accepted`: the provider's id of the refund. */
    provider_reference: z.string().min(1).max(100).optional(),
    /** For `provider_status`: the provider's word for it. */
    provider_status: z.string().min(1).max(40).optional(),
  }),
  output: z.object({ refund_id: z.string(), recorded: z.boolean() }),
  effect: 'write',
  scope: 'refunds:write',
  system: {},
  async handler(input, { db, actor, now }) {
    if (input.step === 'accepted') {
      if (input.provider_reference === undefined) {
        throw new AppError('invalid_request', 'An accepted refund needs its provider_reference.', {
          param: 'provider_reference',
        });
      }
      const recorded = await recordRefundStep(db, actor, input.refund_id, {
        provider_reference: input.provider_reference,
      });
      return { refund_id: input.refund_id, recorded };
    }
    if (input.step === 'provider_status') {
      if (input.provider_status === undefined) {
        throw new AppError('invalid_request', 'A provider_status step needs the provider_status.', {
          param: 'provider_status',
        });
      }
      const recorded = await recordRefundStep(
        db,
        actor,
        input.refund_id,
        { provider_status: input.provider_status },
        { pending: true },
      );
      return { refund_id: input.refund_id, recorded };
    }
    const lastSent = input.last_sent_at ?? null;
    const recorded = await recordRefundStep(
      db,
      actor,
      input.refund_id,
      { submitted_at: now },
      { pending: true, lastSent: lastSent === null ? null : new Date(lastSent) },
    );
    return { refund_id: input.refund_id, recorded };
  },
});
