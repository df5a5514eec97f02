import type { ProviderRail } from '../../db/tables/rails.ts';
import type { RefundRow } from '../../db/tables/money.ts';
import { findPaidAttempt } from '../../db/repositories/payment-attempts.ts';
import { takeLease } from '../../db/repositories/rail-leases.ts';
import { findRailRefundsToAdvance } from '../../db/repositories/refunds.ts';
import type { PaymentRailDeps } from '../deps.ts';
import { recordRefundOutcome } from '../../../tools/system/record-refund-outcome.ts';
import { recordRefundSubmission } from '../../../tools/system/record-refund-submission.ts';
import { runSystemTool } from '../../pipeline/system-runs.ts';
import { recordRailEvent } from '../../db/repositories/rail-events.ts';
import { collectionOfAttempt, PROVIDER_RAILS } from './attempts.ts';
import { RailUnavailableError } from './rail.ts';
import { recordRailRefundNeedsAttention } from '../../metrics/metrics.ts';

const BATCH = 20;

/**
 * Pays pending rail refunds back to payers (docs/rails.md, "Refunds"). A refund_payment on a
 * Paystack payment commits `pending`; here, after that commit, Paystack is asked to refund it, and
 * then asked how it stands until it is processed (succeeded) or failed (undone by
 * record_refund_outcome). Exactly once: `submitted_at` is written before each send, and a refund
 * sent whose answer was lost is looked up by its merchant_note (the refund id) before any resend.
 * Returns how many refunds were looked at.
 */
export async function processRailRefunds(
  deps: PaymentRailDeps,
  stopping: () => boolean = () => false,
): Promise<number> {
  const now = deps.clock.now();
  // A claim lasts longer than the three provider calls one refund can make, so no other worker
  // takes it up while this one is still working on it.
  const lease = Math.max(30_000, 4 * deps.config.rails.timeoutMs);
  const due = await findRailRefundsToAdvance(deps.db, new Date(now.getTime() - lease), BATCH);
  for (const read of due) {
    // Stopping: no further lease is taken; the refunds not reached stay free for the next worker.
    if (stopping()) break;
    try {
      // Taken one at a time, from the row as it is now: a batch takes a while, and a refund is
      // worked on from what the database says, never from a copy read before (db/repositories/rail-leases.ts).
      const refund = await takeLease(deps.db, 'refunds', read, deps.clock.now());
      if (refund?.status === 'pending') await advanceRefund(deps, refund);
    } catch (error) {
      deps.logger.warn({ refundId: read.id, err: (error as Error).message }, 'rail refund not advanced; will retry');
    }
  }
  return due.length;
}

async function advanceRefund(deps: PaymentRailDeps, refund: RefundRow): Promise<void> {
  const rail = refund.rail as ProviderRail;
  const adapter = PROVIDER_RAILS[rail];
  const scope = { accountId: refund.account_id, livemode: refund.livemode };
  const attempt = await findPaidAttempt(deps.db, refund.payment_id, rail);
  const credentials = attempt ? (await collectionOfAttempt(deps, attempt))?.credentials : undefined;
  if (!attempt || !credentials || !adapter.refund || !adapter.findRefund || !adapter.refundStatus) {
    if (refund.submitted_at === null && refund.provider_reference === null) {
      // Never sent, and nothing to send it with: undone, so the balance is not held for nothing.
      await runSystemTool(
        deps,
        recordRefundOutcome,
        {
          refund_id: refund.id,
          outcome: 'failed',
          reason: `no ${rail} collection account holds this payment: the refund could not be sent`,
        },
        scope,
      );
      return;
    }
    deps.logger.error(
      { refundId: refund.id, rail },
      `a ${rail} refund was sent but its collection account cannot be found to follow it`,
    );
    return;
  }
  const args = { services: deps, credentials, attempt };
  const event = (verdict: string, detail: string) =>
    recordRailEvent(deps.db, rail, attempt, 'refund', verdict, `${refund.id}: ${detail}`, deps.clock.now());

  let providerId = refund.provider_reference ?? undefined;
  if (providerId === undefined && refund.submitted_at !== null) {
    providerId = await adapter.findRefund({ ...args, note: refund.id, since: refund.created_at });
  }
  if (providerId === undefined) {
    const firstSend = refund.submitted_at === null;
    // Compare-and-set: of two workers that read the same row, only one sends.
    const marked = await runSystemTool(
      deps,
      recordRefundSubmission,
      { refund_id: refund.id, step: 'sending', last_sent_at: refund.submitted_at?.toISOString() ?? null },
      scope,
    );
    if (!marked.recorded) return;
    try {
      providerId = await adapter.refund({ ...args, amountMinor: refund.amount_minor, note: refund.id });
    } catch (error) {
      // Undone only on the provider's own "no" to a first send; after a resend a refusal may mean
      // the first one went through after all, so it is followed up (and logged) instead.
      if (!(error instanceof RailUnavailableError && error.refused && firstSend)) throw error;
      await event('refused', (error as Error).message);
      await runSystemTool(
        deps,
        recordRefundOutcome,
        { refund_id: refund.id, outcome: 'failed', reason: (error as Error).message.slice(0, 300) },
        scope,
      );
      return;
    }
  }
  if (refund.provider_reference !== providerId) {
    await runSystemTool(
      deps,
      recordRefundSubmission,
      { refund_id: refund.id, step: 'accepted', provider_reference: providerId },
      scope,
    );
    await event('accepted', `${rail} refund ${providerId}`);
  }
  const state = await adapter.refundStatus({ ...args, refundId: providerId });
  if (refund.provider_status !== state.providerStatus) {
    await runSystemTool(
      deps,
      recordRefundSubmission,
      { refund_id: refund.id, step: 'provider_status', provider_status: state.providerStatus },
      scope,
    );
    if (state.outcome === 'needs_attention') {
      await event('needs_attention', `${rail} refund ${providerId} needs the payer's bank account`);
      raiseNeedsAttention(deps, refund, rail, providerId);
    } else if (state.outcome === 'pending') {
      await event(state.providerStatus, `${rail} refund ${providerId} ${state.providerStatus}`);
    }
  }
  if (state.outcome === 'pending' || state.outcome === 'needs_attention') return;
  const outcome = state.outcome;
  await event(outcome, `${rail} refund ${providerId} ${state.providerStatus}`);
  await runSystemTool(
    deps,
    recordRefundOutcome,
    {
      refund_id: refund.id,
      outcome,
      provider_reference: providerId,
      ...(outcome === 'failed' ? { reason: `${rail} marked refund ${providerId} failed` } : {}),
    },
    scope,
  );
}

/**
 * Paystack will not pay this refund by itself (needs-attention: it cannot go back to the payment
 * instrument): it waits for the payer's bank account. It stays pending, its amount held, shown to
 * finance on the refund and the payment; the operator, who holds the integration, is alerted once,
 * as it enters that state (an error line and a counter; docs/operations.md).
 */
function raiseNeedsAttention(
  deps: Pick<PaymentRailDeps, 'logger'>,
  refund: RefundRow,
  rail: ProviderRail,
  providerId: string,
): void {
  recordRailRefundNeedsAttention(rail);
  deps.logger.error(
    {
      rail,
      refundId: refund.id,
      paymentId: refund.payment_id,
      accountId: refund.account_id,
      providerRefund: providerId,
    },
    `${rail} refund ${providerId} (plainpay refund ${refund.id}) needs attention: ${rail} cannot send it back to the payer's card or account and needs the payer's bank account. Retry it with the details the merchant gives (docs/operations.md, "Refunds needing attention").`,
  );
}
