import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool, type ToolContext } from '../../src/core/tool.ts';
import { type AttemptOutcome, isOpenAttempt, type PaymentRow } from '../../src/db/database.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { newId } from '../../src/domain/ids.ts';
import { presentPayment } from '../../src/domain/present-payment.ts';
import type { EventType } from '../../src/webhooks/event-types.ts';
import { paymentOutput } from '../payment-output.ts';
import { RAIL_NAMES } from '../../src/db/tables/rails.ts';
import { lockOwnedPayment, notPayable } from './attempt-rules.ts';
import { insertPaymentAttempt, updatePaymentAttempt } from '../../src/db/money-writes/payment-attempts.ts';
import { findCollectionAccountOwner } from '../../src/db/repositories/collection-accounts.ts';
import { lockRailAttempt } from '../../src/db/repositories/payment-attempts.ts';

const OUTCOMES = ['succeeded', 'declined', 'abandoned', 'cancelled', 'timed_out', 'failed', 'unknown'] as const;

const recordInput = z.strictObject({
  payment_id: z.string().min(1).max(100).describe('The payment (pay_…).'),
  attempt_id: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe('The attempt; absent for a synchronous (sandbox) attempt.'),
  rail: z.enum(RAIL_NAMES),
  outcome: z
    .enum(OUTCOMES)
    .describe(
      "How the attempt ended; `unknown`: the provider's answer was lost, timed out or came back 5xx, so the attempt stays open.",
    ),
  reason: z.string().max(300).optional().describe("The provider's words for a failure, or why the outcome is unknown."),
  confirmed: z
    .strictObject({
      amount_minor: z
        .string()
        .regex(/^\d{1,30}$/)
        .describe('What the payer was asked, as the provider reports it.'),
      payer_fee_minor: z
        .string()
        .regex(/^\d{1,30}$/)
        .optional()
        .describe(
          "What the payer paid on top and the provider kept (Paystack's fees passed to the customer): kept on the attempt, never the merchant's.",
        ),
      currency: z.string().min(2).max(8),
      reference: z.string().min(1).max(100),
      receipt: z.string().max(100).optional(),
    })
    .optional()
    .describe('What the provider itself reported for a success (its verify or query API).'),
});
type RecordInput = z.output<typeof recordInput>;

const recordOutput = z.object({
  result: z.enum(['paid', 'ended', 'unknown', 'flagged', 'late', 'duplicate']),
  attempt_id: z.string(),
  outcome: z.string(),
  payment: paymentOutput,
});
type RecordOutput = z.output<typeof recordOutput>;

/**
 * How a payer's attempt ended, on any rail: the one place a payment becomes paid (docs/rails.md).
 *
 * - A success on a provider rail carries what the provider confirmed (amount, currency, reference);
 *   anything that differs from what the attempt asked flags the attempt and pays nothing. A fee the
 *   payer paid on top (Paystack's fees passed to the customer) is no difference: it is kept on the
 *   attempt as payer_fee_minor, apart, and never credited to the merchant.
 * - A success for an attempt in flight pays the payment (processing → paid, `payment.paid`).
 * - A success the payment can no longer take (its attempt was given up as abandoned or timed out,
 *   and the session expired or was paid another way) is a late success: recorded, announced as
 *   `payment.late_success`, and returned to the payer (docs/rails.md, "Late successes").
 * - `unknown` leaves an attempt in flight open, its outcome unknown (the provider's answer was lost
 *   or came back 5xx: it may have acted); the payment stays processing, so the payer cannot start
 *   another attempt, until the provider says what happened (docs/rails.md, "Unknown answers").
 * - Anything else ends the attempt; the payment is payable again (processing → pending).
 * - An attempt that has already ended does not change again: the same event twice pays once.
 * - A success recorded (paid, late or flagged) is no longer a signed event awaiting confirmation.
 *
 * Without attempt_id the attempt is synchronous (the sandbox rail): recorded and applied at once.
 */
export const recordPaymentAttempt = defineTool({
  name: 'record_payment_attempt',
  title: 'Record how a payment attempt ended',
  description:
    "Applies a payer rail's confirmed outcome to the payment attempt and the payment, or records that the provider's answer is unknown.",
  input: recordInput,
  output: recordOutput,
  effect: 'write',
  scope: 'payments:write',
  system: {},
  async handler(input, ctx): Promise<RecordOutput> {
    const payment = await lockOwnedPayment(ctx.db, ctx.actor, input.payment_id);
    if (input.attempt_id === undefined) return recordSynchronous(input, payment, ctx);

    const { db, now } = ctx;
    const attempt = await lockRailAttempt(db, payment.id, input.attempt_id, input.rail);
    if (!attempt) throw new AppError('not_found', `No attempt '${input.attempt_id}' of this payment on ${input.rail}.`);
    const answer = (result: RecordOutput['result'], row: PaymentRow, outcome: string) => ({
      result,
      attempt_id: attempt.id,
      outcome,
      payment: presentPayment(ctx.config, row),
    });
    const reopen = async (): Promise<PaymentRow> =>
      payment.status === 'processing'
        ? ((await transitionPayment(db, payment.id, 'processing', 'pending', {}, now)) ?? payment)
        : payment;

    const ended = !isOpenAttempt(attempt.outcome);
    if (attempt.outcome === 'succeeded' || attempt.outcome === 'flagged') {
      return answer('duplicate', payment, attempt.outcome);
    }
    if (input.outcome === 'unknown') {
      if (attempt.outcome !== 'pending') return answer('duplicate', payment, attempt.outcome);
      await updatePaymentAttempt(db, attempt.id, { outcome: 'unknown', failure_reason: input.reason ?? null });
      return answer('unknown', payment, 'unknown');
    }
    if (input.outcome !== 'succeeded') {
      if (ended) return answer('duplicate', payment, attempt.outcome);
      await endAttempt(ctx, attempt.id, input.outcome, input.reason ?? null);
      return answer('ended', await reopen(), input.outcome);
    }

    const payerFee = input.confirmed?.payer_fee_minor === undefined ? null : BigInt(input.confirmed.payer_fee_minor);
    const mismatch =
      confirmationMismatch(input.confirmed, attempt, input.rail) ??
      (await notOperatorCollected(ctx, attempt.collection_id, input.rail));
    if (mismatch) {
      await endAttempt(ctx, attempt.id, 'flagged', mismatch);
      // The provider took money plainpay did not credit: it goes back to the payer like a late success.
      await updatePaymentAttempt(db, attempt.id, {
        refund_status: input.rail === 'paystack' ? 'due' : 'manual',
        provider_receipt: input.confirmed?.receipt ?? null,
        payer_fee_minor: payerFee,
        unconfirmed_event_at: null,
        checked_at: null,
      });
      ctx.logger.warn({ attemptId: attempt.id, paymentId: payment.id, mismatch }, 'payment attempt flagged');
      return answer('flagged', ended ? payment : await reopen(), 'flagged');
    }

    const receipt = input.confirmed?.receipt ?? null;
    if (!ended && payment.status === 'processing') {
      await updatePaymentAttempt(db, attempt.id, {
        outcome: 'succeeded',
        provider_receipt: receipt,
        payer_fee_minor: payerFee,
        unconfirmed_event_at: null,
        completed_at: now,
      });
      const paid = await transitionPayment(db, payment.id, 'processing', 'paid', { paid_at: now }, now);
      if (!paid) throw notPayable('changed');
      await announce(ctx, paid, 'payment.paid');
      return answer('paid', paid, 'succeeded');
    }

    // The provider took the payer's money after plainpay had given the attempt up: never dropped.
    await updatePaymentAttempt(db, attempt.id, {
      outcome: 'succeeded',
      late: true,
      provider_receipt: receipt,
      payer_fee_minor: payerFee,
      unconfirmed_event_at: null,
      refund_status: input.rail === 'paystack' ? 'due' : 'manual',
      // Due at the reconciler's next pass, not a recheck interval after the last verification.
      checked_at: null,
      completed_at: now,
    });
    await announce(ctx, payment, 'payment.late_success', {
      attempt: {
        id: attempt.id,
        rail: input.rail,
        receipt,
        refund: input.rail === 'paystack' ? 'automatic' : 'manual',
      },
    });
    ctx.logger.warn({ attemptId: attempt.id, paymentId: payment.id }, 'late success on a payment attempt');
    return answer('late', payment, 'succeeded');
  },
});

/** The sandbox answers at once: attempt and outcome in one step, from a pending, open payment. */
async function recordSynchronous(input: RecordInput, payment: PaymentRow, ctx: ToolContext): Promise<RecordOutput> {
  const { db, now } = ctx;
  if (input.rail !== 'sandbox') throw new AppError('invalid_request', 'Only the sandbox rail answers synchronously.');
  if (payment.livemode) throw new AppError('not_found', `No test-mode payment with id '${payment.id}'.`);
  if (payment.status !== 'pending') throw notPayable(payment.status);
  if (payment.expires_at <= now) throw notPayable('expired');
  const succeeded = input.outcome === 'succeeded';
  const attemptId = newId('att');
  await insertPaymentAttempt(db, {
    id: attemptId,
    payment_id: payment.id,
    rail: 'sandbox',
    outcome: succeeded ? 'succeeded' : 'declined',
    failure_reason: succeeded ? null : (input.reason ?? 'sandbox_declined'),
    amount_minor: payment.amount_minor,
    currency: payment.currency,
    completed_at: now,
    created_at: now,
  });
  let row = payment;
  if (succeeded) {
    const paid = await transitionPayment(db, payment.id, 'pending', 'paid', { paid_at: now }, now);
    if (!paid) throw notPayable('changed');
    await announce(ctx, paid, 'payment.paid');
    row = paid;
  }
  return {
    result: succeeded ? ('paid' as const) : ('ended' as const),
    attempt_id: attemptId,
    outcome: succeeded ? 'succeeded' : 'declined',
    payment: presentPayment(ctx.config, row),
  };
}

async function endAttempt(ctx: ToolContext, id: string, outcome: AttemptOutcome, reason: string | null) {
  await updatePaymentAttempt(ctx.db, id, { outcome, failure_reason: reason, completed_at: ctx.now });
}

/** What the provider confirmed must be exactly what the attempt asked; else why not, in words. */
function confirmationMismatch(
  confirmed: RecordInput['confirmed'],
  attempt: { amount_minor: bigint | null; currency: string | null; provider_reference: string | null },
  rail: string,
): string | undefined {
  if (rail === 'sandbox') return undefined;
  if (!confirmed) return 'no provider confirmation came with the success';
  const problems: string[] = [];
  if (attempt.amount_minor === null || confirmed.amount_minor !== attempt.amount_minor.toString()) {
    problems.push(`amount ${confirmed.amount_minor} (asked ${attempt.amount_minor})`);
  }
  if (confirmed.currency !== attempt.currency)
    problems.push(`currency ${confirmed.currency} (asked ${attempt.currency})`);
  if (confirmed.reference !== attempt.provider_reference) {
    problems.push(`reference ${confirmed.reference} (asked ${attempt.provider_reference})`);
  }
  return problems.length === 0 ? undefined : `the provider confirmed ${problems.join(', ')}`;
}

/**
 * The collection invariant, at the one place a payment becomes paid: money that reached anything
 * but an operator-owned collection account (a merchant's own credential from before collection
 * became the operator's) is never credited, or the merchant would be paid twice.
 */
async function notOperatorCollected(
  ctx: ToolContext,
  collectionId: string | null,
  rail: string,
): Promise<string | undefined> {
  if (rail === 'sandbox') return undefined;
  const collection = collectionId === null ? undefined : await findCollectionAccountOwner(ctx.db, collectionId);
  if (collection?.owner === 'operator') return undefined;
  return "the money was collected outside the operator's collection accounts (a merchant-owned credential): not credited";
}

async function announce(ctx: ToolContext, row: PaymentRow, type: EventType, extra: Record<string, unknown> = {}) {
  const view = presentPayment(ctx.config, row);
  await insertEvent(ctx.db, {
    accountId: row.account_id,
    livemode: row.livemode,
    type,
    objectId: row.id,
    data: { object: view, reference: view.reference, metadata: view.metadata, ...extra },
    webhookUrl: row.webhook_url,
    createdAt: ctx.now,
  });
}
