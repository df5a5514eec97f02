import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { defineTool } from '../../src/core/tool.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { newId } from '../../src/domain/ids.ts';
import { paystackReference } from '../../src/domain/provider-references.ts';
import { RAIL_NAMES } from '../../src/db/tables/rails.ts';
import { lockOwnedPayment, notPayable } from './attempt-rules.ts';
import { insertPaymentAttempt } from '../../src/db/money-writes/payment-attempts.ts';
import { findOperatorCollectionFor } from '../../src/db/repositories/collection-accounts.ts';

/**
 * A payer starts paying on a provider rail (Paystack, M-Pesa): the attempt is recorded `pending`
 * and the payment moves pending → processing, so that one payment has at most one attempt in flight
 * (two tabs, two rails: the second is refused, and the payer is never charged twice). The provider is
 * called after this commits; its answer comes back through record_payment_attempt.
 * A system tool: the checkout host runs it on the `system` channel, never a key, MCP or the agent.
 */
export const startPaymentAttempt = defineTool({
  name: 'start_payment_attempt',
  title: 'Start a payment attempt on a payer rail',
  description: 'Records a payer starting to pay on a provider rail and marks the payment processing.',
  input: z.strictObject({
    payment_id: z.string().min(1).max(100).describe('The payment the payer is paying (pay_…).'),
    rail: z.enum(RAIL_NAMES).exclude(['sandbox']).describe('The provider rail.'),
    collection_id: z
      .string()
      .min(1)
      .max(100)
      .describe("The operator's collection account the payer pays into (col_…)."),
    payer_hint: z.string().max(100).optional().describe("The payer's email or phone, masked."),
    callback_token_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional()
      .describe("SHA-256 of the secret in an unsigned callback's URL (M-Pesa)."),
  }),
  output: z.object({
    attempt_id: z.string(),
    payment_id: z.string(),
    amount_minor: z.string().describe('What the provider is asked for, in the currency minor unit.'),
    currency: z.string(),
  }),
  effect: 'write',
  scope: 'payments:write',
  system: {},
  async handler(input, { db, actor, now }) {
    const payment = await lockOwnedPayment(db, actor, input.payment_id);
    if (payment.status !== 'pending') throw notPayable(payment.status);
    if (payment.expires_at <= now) throw notPayable('expired');
    // The guard next to the side effect: a payer only ever pays into a collection account the
    // operator set for this account (or for every account) in this mode (docs/rails.md).
    const collection = await findOperatorCollectionFor(
      db,
      { accountId: payment.account_id, livemode: payment.livemode },
      input.collection_id,
      input.rail,
    );
    if (!collection) {
      throw new AppError('invalid_request', `${input.rail} does not collect for this payment.`, {
        param: 'collection_id',
      });
    }
    const attemptId = newId('att');
    await insertPaymentAttempt(db, {
      id: attemptId,
      payment_id: payment.id,
      rail: input.rail,
      outcome: 'pending',
      failure_reason: null,
      amount_minor: payment.amount_minor,
      currency: payment.currency,
      payer_hint: input.payer_hint ?? null,
      callback_token_hash: input.callback_token_sha256 ?? null,
      collection_id: collection.id,
      // Paystack takes the reference from us; M-Pesa's CheckoutRequestID comes back from the push.
      provider_reference: input.rail === 'paystack' ? paystackReference(attemptId) : null,
      created_at: now,
    });
    const moved = await transitionPayment(db, payment.id, 'pending', 'processing', {}, now);
    if (!moved) throw new AppError('conflict', 'The payment changed while starting the attempt; reload it.');
    return {
      attempt_id: attemptId,
      payment_id: payment.id,
      amount_minor: payment.amount_minor.toString(),
      currency: payment.currency,
    };
  },
});
