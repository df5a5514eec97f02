import { isOpenAttempt, type ModeScope } from '../../db/database.ts';
import type { ProviderRail } from '../../db/tables/rails.ts';
import {
  findLateSuccessesToRefund,
  findOpenAttemptsToCheck,
  findPaymentAttemptById,
  findUnconfirmedEventAttempts,
  forgetSignedSuccess,
  type PaymentAttemptRow,
} from '../../db/repositories/payment-attempts.ts';
import { findPaymentOwner, findPaymentOwnerAndExpiry } from '../../db/repositories/payments.ts';
import { takeLease } from '../../db/repositories/rail-leases.ts';
import type { PaymentRailDeps } from '../deps.ts';
import { pollingJob, type WorkerJob } from '../../worker-job.ts';
import { recordPaymentAttempt } from '../../../tools/system/record-payment-attempt.ts';
import { recordLateSuccessRefund } from '../../../tools/system/record-late-success-refund.ts';
import { runSystemTool } from '../../pipeline/system-runs.ts';
import { recordRailEvent } from '../../db/repositories/rail-events.ts';
import { checkAttempt, collectionOfAttempt, PROVIDER_RAILS } from './attempts.ts';
import { unconfirmedPushReason } from './mpesa.ts';
import { type ProviderVerdict, RailUnavailableError } from './rail.ts';
import { processRailRefunds } from './refunds.ts';

/** An attempt is first asked about this long after it started (the callback usually comes first). */
const FIRST_CHECK_MS = 30_000;
/** And again at most this often while it stays open. */
const RECHECK_MS = 30_000;
/**
 * An M-Pesa prompt lapses on the phone after about a minute (Daraja then answers 1037 or 1019);
 * past this, it can no longer be answered (mpesaPastItsPrompt).
 */
const MPESA_GIVE_UP_MS = 5 * 60_000;
/** A Paystack payer may take a while on Paystack's page; past this (or the session's end) abandoned is final. */
const PAYSTACK_ABANDON_MS = 30 * 60_000;
/** A signed event verify has not confirmed is asked about this long: as long as Paystack retries it (live, 72 h). */
const KEEP_UNCONFIRMED_EVENT_MS = 72 * 60 * 60_000;
const BATCH = 20;
const POLL_MS = 5000;

/**
 * The payer rails' safety net (docs/rails.md): attempts still open are asked about (a callback can
 * be lost; a payer can close the tab), so a payment never stays `processing` for want of a message;
 * attempts that ended with a signed success event verify has not confirmed yet are asked about
 * again until it does (a late success paid while verify was failing); and late successes due a
 * refund are refunded. Attempts are claimed with `checked_at` as a lease, so several workers share
 * the work and no provider is asked twice at once. Returns how many attempts of either kind were due.
 */
export async function reconcileRailAttempts(
  deps: PaymentRailDeps,
  stopping: () => boolean = () => false,
): Promise<number> {
  const now = deps.clock.now();
  const leaseCutoff = new Date(now.getTime() - RECHECK_MS);
  const open = await findOpenAttemptsToCheck(deps.db, new Date(now.getTime() - FIRST_CHECK_MS), leaseCutoff, BATCH);
  const unconfirmed = await findUnconfirmedEventAttempts(deps.db, leaseCutoff, BATCH);
  const due = Math.max(open.length, unconfirmed.length);

  for (const read of [...open, ...unconfirmed]) {
    // Stopping: no further lease is taken (leases are taken one row at a time, so the rest stay free).
    if (stopping()) return due;
    const attempt = await takeLease(deps.db, 'payment_attempts', read, deps.clock.now());
    if (!attempt) continue;
    try {
      if (isOpenAttempt(attempt.outcome)) await reconcileOpen(deps, attempt, now);
      else if (attempt.unconfirmed_event_at !== null) await reconfirmEvent(deps, attempt, now);
    } catch (error) {
      deps.logger.error({ err: error, attemptId: attempt.id }, 'reconciling a payment attempt failed; will retry');
    }
  }
  if (!stopping()) await refundLateSuccesses(deps, stopping);
  return due;
}

/** An attempt still open: asked about, ended once stale, and a success nobody signed for said so. */
async function reconcileOpen(deps: PaymentRailDeps, attempt: PaymentAttemptRow, now: Date): Promise<void> {
  const payment = await findPaymentOwnerAndExpiry(deps.db, attempt.payment_id);
  const age = now.getTime() - attempt.created_at.getTime();
  const stale = age > PAYSTACK_ABANDON_MS || payment.expires_at.getTime() <= now.getTime();
  // M-Pesa's query is the confirmation. Paystack money counts only on its signed event: a success
  // verify reports is paid here only if that event came (and verify failed or lagged then).
  const signedEvent = attempt.unconfirmed_event_at !== null;
  const verdict = await checkAttempt(deps, attempt, {
    trigger: 'reconcile',
    mayPay: attempt.rail === 'mpesa' || signedEvent,
    abandonIsFinal: stale,
  });
  if (attempt.rail === 'mpesa' && age > MPESA_GIVE_UP_MS && (verdict === undefined || verdict.outcome === 'pending')) {
    await mpesaPastItsPrompt(deps, attempt, verdict, { accountId: payment.account_id, livemode: payment.livemode });
  }
  if (attempt.rail === 'paystack' && verdict?.outcome === 'succeeded' && !signedEvent) {
    deps.logger.error(
      { attemptId: attempt.id, paymentId: attempt.payment_id, reference: attempt.provider_reference },
      "Paystack's verify reports this payment successful, but no signed charge.success for it has reached plainpay, so it is not credited: check the webhook URL on the Paystack dashboard ({PUBLIC_BASE_URL}/hooks/paystack) and its failed deliveries",
    );
  }
}

/**
 * An M-Pesa attempt still open once its prompt can no longer be answered (docs/rails.md, "Unknown
 * answers"). What ends it is what Daraja said:
 *  - the query still answering "being processed": Daraja answered, nothing was paid; timed out (a
 *    PIN entered later is a late success);
 *  - the query not answering (a 5xx, a timeout): nobody knows whether the payer paid, so it is
 *    unknown, and stays open, the payment `processing`, while the query is asked every pass: a
 *    PIN entered during the outage is recorded when the query recovers;
 *  - no CheckoutRequestID (Daraja never acknowledged the push, and no callback has named it):
 *    there is nothing to ask Daraja about (the query needs the ID; only the callback carries it).
 *    The push either never reached M-Pesa, or did and its one callback was lost. Ended as timed
 *    out, saying so: the payer may pay again, and should a callback still name it, its success is
 *    a late one; a success whose callback was lost shows in the M-Pesa org portal, whose listing the
 *    daily reconciliation reads.
 */
async function mpesaPastItsPrompt(
  deps: PaymentRailDeps,
  checked: PaymentAttemptRow,
  verdict: ProviderVerdict | undefined,
  scope: ModeScope,
): Promise<void> {
  // As it is now: a callback may have named the push since the lease was taken.
  const attempt = await findPaymentAttemptById(deps.db, checked.id);
  if (!isOpenAttempt(attempt.outcome)) return;
  // The verdict is Daraja's answer only if the query was asked (the push had its ID then).
  const darajaSaid = checked.provider_reference === null ? undefined : verdict;
  const record = (outcome: 'timed_out' | 'unknown', reason: string) =>
    runSystemTool(
      deps,
      recordPaymentAttempt,
      { payment_id: attempt.payment_id, attempt_id: attempt.id, rail: 'mpesa', outcome, reason: reason.slice(0, 300) },
      scope,
    );
  if (attempt.provider_reference === null) {
    deps.logger.warn(
      { attemptId: attempt.id, paymentId: attempt.payment_id },
      'M-Pesa never acknowledged this push and no callback named it: ended; if the payer paid, the M-Pesa org portal shows it',
    );
    await record('timed_out', unconfirmedPushReason(attempt.failure_reason));
  } else if (darajaSaid?.outcome === 'pending') {
    await record('timed_out', 'M-Pesa still reported the prompt open 5 minutes after the push');
  } else if (attempt.outcome === 'pending') {
    await record(
      'unknown',
      "M-Pesa's status query did not answer once the prompt could no longer be answered; asking until it does",
    );
  }
}

/**
 * An attempt that ended (abandoned, say) while a signed charge.success for it is kept unconfirmed:
 * the payer paid after all, and verify failed or lagged when the event came. Verify is asked again
 * until it confirms (a late success: recorded once, refunded), for as long as Paystack itself keeps
 * sending an event; past that it is given up, loudly, for a person to look at.
 */
async function reconfirmEvent(deps: PaymentRailDeps, attempt: PaymentAttemptRow, now: Date): Promise<void> {
  const receivedAt = attempt.unconfirmed_event_at!;
  if (now.getTime() - receivedAt.getTime() <= KEEP_UNCONFIRMED_EVENT_MS) {
    await checkAttempt(deps, attempt, { trigger: 'reconcile', mayPay: true, abandonIsFinal: false });
    return;
  }
  const detail = `the signed charge.success received ${receivedAt.toISOString()} was not confirmed by verify in 72 hours: no longer asked`;
  deps.logger.error(
    { attemptId: attempt.id, paymentId: attempt.payment_id, reference: attempt.provider_reference },
    `Paystack sent a signed charge.success for this ended attempt on ${receivedAt.toISOString()} and verify has not confirmed it since: no longer asked. Look the transaction up on the Paystack dashboard; if it was paid, refund it there.`,
  );
  await forgetSignedSuccess(deps.db, attempt.id);
  await recordRailEvent(deps.db, 'paystack', attempt, 'verification', 'unconfirmed', detail, now);
}

/** Late successes on a rail with a refund API go back to the payer (docs/rails.md, "Late successes"). */
async function refundLateSuccesses(deps: PaymentRailDeps, stopping: () => boolean): Promise<void> {
  const now = deps.clock.now();
  // Longer than the two provider calls a refund makes: no second worker takes it up meanwhile.
  const lease = Math.max(RECHECK_MS, 3 * deps.config.rails.timeoutMs);
  const due = await findLateSuccessesToRefund(deps.db, new Date(now.getTime() - lease), BATCH);
  for (const read of due) {
    if (stopping()) return;
    const attempt = await takeLease(deps.db, 'payment_attempts', read, deps.clock.now());
    if (attempt?.refund_status !== 'due') continue;
    const rail = attempt.rail as ProviderRail;
    const { refund, findRefund } = PROVIDER_RAILS[rail];
    if (!refund || !findRefund) continue;
    const collection = await collectionOfAttempt(deps, attempt);
    if (!collection) continue;
    const { credentials } = collection;
    try {
      // A send whose answer was lost is found by its note before anything is sent again.
      const refundId =
        (await findRefund({
          services: deps,
          credentials,
          attempt,
          note: attempt.id,
          // Due since the success was recorded: never sent before then.
          since: attempt.completed_at ?? attempt.created_at,
        })) ?? (await refund({ services: deps, credentials, attempt, note: attempt.id }));
      // A money status change, so a system tool's: in the payment's action log, a compare-and-set
      // there so that two workers cannot both record (or both ask for) the refund.
      const payment = await findPaymentOwner(deps.db, attempt.payment_id);
      await runSystemTool(
        deps,
        recordLateSuccessRefund,
        { attempt_id: attempt.id, refund_reference: refundId },
        { accountId: payment.account_id, livemode: payment.livemode },
      );
    } catch (error) {
      const message = error instanceof RailUnavailableError ? error.message : String(error);
      await recordRailEvent(deps.db, rail, attempt, 'refund', 'failed', message, now);
      deps.logger.warn({ attemptId: attempt.id, err: message }, 'refunding a late success failed; will retry');
    }
  }
}

export const railReconcileJob: WorkerJob = pollingJob('payer rails', POLL_MS, async (deps, stopping) => {
  while (!stopping() && (await reconcileRailAttempts(deps, stopping)) === BATCH) {
    // A full batch: more are due.
  }
  while (!stopping() && (await processRailRefunds(deps, stopping)) === BATCH) {
    // Likewise for refunds.
  }
});
