import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool } from '../../src/core/tool.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { credit, debit, ledgerAccount } from '../../src/ledger/ledger.ts';
import { postLedger } from '../../src/db/money-writes/ledger.ts';
import { presentPayment } from '../../src/domain/present-payment.ts';
import { presentRefund } from '../../src/refunds/refunds.ts';
import { updateRefund, updateRefundRow } from '../../src/db/money-writes/refunds.ts';
import { lockPaymentById } from '../../src/db/repositories/payments.ts';
import { lockScopedRefund } from '../../src/db/repositories/refunds.ts';

/**
 * How a provider rail's refund ended (docs/rails.md, "Refunds"): the one place a pending refund
 * becomes succeeded, or failed and undone. Undoing posts the refund's own entries the other way
 * (exactly what it took: the merchant's share back to the balance, the fee back to the service),
 * lowers the payment's refunded amount and status to match, and announces `refund.failed`.
 * A refund that has ended never changes again: the same answer twice changes nothing.
 */
export const recordRefundOutcome = defineTool({
  name: 'record_refund_outcome',
  title: 'Record how a rail refund ended',
  description: "Applies a payer rail's final answer about a refund to the refund, the ledger and the payment.",
  input: z.strictObject({
    refund_id: z.string().min(1).max(100),
    outcome: z.enum(['succeeded', 'failed']),
    provider_reference: z.string().max(100).optional(),
    reason: z.string().max(300).optional(),
  }),
  output: z.object({ result: z.enum(['recorded', 'duplicate']), refund_id: z.string(), status: z.string() }),
  effect: 'write',
  scope: 'refunds:write',
  system: {},
  async handler(input, ctx) {
    const { db, actor, now } = ctx;
    const refund = await lockScopedRefund(db, actor, input.refund_id);
    if (!refund) throw new AppError('not_found', `No such refund: '${input.refund_id}'.`, { param: 'refund_id' });
    if (refund.status !== 'pending')
      return { result: 'duplicate' as const, refund_id: refund.id, status: refund.status };

    if (input.outcome === 'succeeded') {
      await updateRefund(db, refund.id, {
        status: 'succeeded',
        provider_reference: input.provider_reference ?? refund.provider_reference,
        completed_at: now,
      });
      return { result: 'recorded' as const, refund_id: refund.id, status: 'succeeded' };
    }

    const payment = await lockPaymentById(db, refund.payment_id);
    const mode = payment.livemode;
    const asset = payment.settlement_asset;
    await postLedger(db, {
      kind: 'refund_failed',
      reference: refund.id,
      at: now,
      entries: [
        credit(ledgerAccount.merchant(payment.account_id, mode, asset), refund.merchant_debit_minor),
        credit(ledgerAccount.fees(mode, asset), refund.fee_return_minor),
        debit(ledgerAccount.fx(mode, asset), refund.merchant_debit_minor + refund.fee_return_minor),
        credit(ledgerAccount.fx(mode, payment.currency), refund.amount_minor),
        debit(ledgerAccount.railClearing(mode, payment.currency), refund.amount_minor),
      ],
    });
    const refundedAfter = payment.refunded_minor - refund.amount_minor;
    const undone = await transitionPayment(
      db,
      payment.id,
      payment.status,
      refundedAfter === 0n ? 'settled' : 'partially_refunded',
      { refunded_minor: refundedAfter },
      now,
    );
    if (!undone) throw new AppError('conflict', `Payment ${payment.id} changed while undoing a refund; retry.`);
    const failed = await updateRefundRow(db, refund.id, {
      status: 'failed',
      failure_reason: input.reason ?? 'the provider refused the refund',
      provider_reference: input.provider_reference ?? refund.provider_reference,
      completed_at: now,
    });
    const view = presentPayment(ctx.config, undone);
    await insertEvent(db, {
      accountId: undone.account_id,
      livemode: undone.livemode,
      type: 'refund.failed',
      objectId: undone.id,
      data: { reference: view.reference, metadata: view.metadata, refund: presentRefund(failed, undone), object: view },
      webhookUrl: undone.webhook_url,
      createdAt: now,
    });
    return { result: 'recorded' as const, refund_id: refund.id, status: 'failed' };
  },
});
