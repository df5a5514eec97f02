import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool } from '../../src/core/tool.ts';

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
    const mine = db
      .updateTable('refunds')
      .where('id', '=', input.refund_id)
      .where('account_id', '=', actor.accountId)
      .where('livemode', '=', actor.livemode);
    if (input.step === 'accepted') {
      if (input.provider_reference === undefined) {
        throw new AppError('invalid_request', 'An accepted refund needs its provider_reference.', {
          param: 'provider_reference',
        });
      }
      const updated = await mine.set({ provider_reference: input.provider_reference }).executeTakeFirst();
      return { refund_id: input.refund_id, recorded: updated.numUpdatedRows > 0n };
    }
    if (input.step === 'provider_status') {
      if (input.provider_status === undefined) {
        throw new AppError('invalid_request', 'A provider_status step needs the provider_status.', {
          param: 'provider_status',
        });
      }
      const updated = await mine
        .set({ provider_status: input.provider_status })
        .where('status', '=', 'pending')
        .executeTakeFirst();
      return { refund_id: input.refund_id, recorded: updated.numUpdatedRows > 0n };
    }
    const lastSent = input.last_sent_at ?? null;
    const marked = await mine
      .set({ submitted_at: now })
      .where('status', '=', 'pending')
      .where((eb) => (lastSent === null ? eb('submitted_at', 'is', null) : eb('submitted_at', '=', new Date(lastSent))))
      .executeTakeFirst();
    return { refund_id: input.refund_id, recorded: marked.numUpdatedRows > 0n };
  },
});
