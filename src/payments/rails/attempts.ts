import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../core/sha256.ts';
import { AppError } from '../../core/errors.ts';
import { runSystemTool } from '../../pipeline/system-runs.ts';
import type { Db, ModeScope, PaymentRow } from '../../db/database.ts';
import type { ProviderRail } from '../../db/tables/rails.ts';
import {
  findPaymentAttemptById,
  markAttemptChecked,
  type PaymentAttemptRow,
  recordProviderStart,
} from '../../db/repositories/payment-attempts.ts';
import { findPaymentById } from '../../db/repositories/payments.ts';
import { recordRailEvent } from '../../db/repositories/rail-events.ts';
import type { PaymentRailDeps } from '../deps.ts';
import { recordPaymentAttempt } from '../../../tools/system/record-payment-attempt.ts';
import { startPaymentAttempt } from '../../../tools/system/start-payment-attempt.ts';
import {
  type CollectionAccount,
  collectionAccountFor,
  collectionById,
  collectionFor,
  markCurrencyRefused,
  type OpenCollection,
} from './collections.ts';
import { mpesaRail, stkCallbackUrl } from './mpesa.ts';
import { paystackRail } from './paystack.ts';
import {
  alertOperator,
  CurrencyRefusedError,
  type ProviderRailAdapter,
  type ProviderVerdict,
  RailUnavailableError,
} from './rail.ts';
import { recordRailCurrencyRefused } from '../../metrics/metrics.ts';

/**
 * The payer rails' flow (docs/rails.md): start an attempt, ask the provider, apply what it says.
 * Every status change goes through the system tools (tools/system/), on the `system` channel.
 */

// biome-ignore lint/suspicious/noExplicitAny: each adapter has its own payer type.
export const PROVIDER_RAILS: Readonly<Record<ProviderRail, ProviderRailAdapter<any, any>>> = {
  paystack: paystackRail,
  mpesa: mpesaRail,
};

const scopeOf = (payment: PaymentRow): ModeScope => ({ accountId: payment.account_id, livemode: payment.livemode });

/**
 * The provider rails a payer may use for this payment: the operator collects on them for its
 * account and mode, they can take it, and the integration has not refused its currency.
 */
export async function offeredRails(deps: Pick<PaymentRailDeps, 'db'>, payment: PaymentRow): Promise<ProviderRail[]> {
  return (await offeredRailsOf(deps, scopeOf(payment)))
    .filter(({ rail, currencies }) => currencies.includes(payment.currency) && PROVIDER_RAILS[rail].takes(payment))
    .map(({ rail }) => rail);
}

/**
 * The provider rails checkouts of this account and mode offer, with the currencies each takes:
 * the rail's own, less those its collection account's provider refused.
 */
export async function offeredRailsOf(
  deps: Pick<PaymentRailDeps, 'db'>,
  scope: ModeScope,
): Promise<Array<{ rail: ProviderRail; currencies: string[] }>> {
  const offered: Array<{ rail: ProviderRail; currencies: string[] }> = [];
  for (const rail of Object.keys(PROVIDER_RAILS) as ProviderRail[]) {
    const collection = await collectionAccountFor(deps.db, scope, rail);
    if (!collection) continue;
    const refused = new Set(collection.refusedCurrencies);
    offered.push({ rail, currencies: PROVIDER_RAILS[rail].currencies.filter((c) => !refused.has(c)) });
  }
  return offered;
}

/** Whether a collection account takes a payment's currency (the provider has not refused it). */
function collects(collection: OpenCollection, payment: PaymentRow): boolean {
  return !collection.account.refusedCurrencies.includes(payment.currency);
}

/** A payer asks to pay on a provider rail: where their browser goes next (undefined: stay). */
export async function beginAttempt(
  deps: PaymentRailDeps,
  payment: PaymentRow,
  rail: ProviderRail,
  form: URLSearchParams,
): Promise<{ attemptId: string; payerUrl: string | undefined }> {
  const adapter = PROVIDER_RAILS[rail];
  const scope = scopeOf(payment);
  const collection = adapter.takes(payment) ? await collectionFor(deps.db, deps.secretBox, scope, rail) : undefined;
  if (!collection || !collects(collection, payment))
    throw new AppError('invalid_request', `${adapter.label} is not available for this payment.`, { param: 'rail' });
  const { credentials } = collection;
  const payer = adapter.readPayer(form);
  // An unsigned callback (M-Pesa) is only heard on a URL holding a secret of this attempt's own:
  // 256 bits, in hex, whose letters cannot spell a word Daraja refuses in a callback URL.
  const callbackToken = randomBytes(32).toString('hex');
  const started = await runSystemTool(
    deps,
    startPaymentAttempt,
    {
      payment_id: payment.id,
      rail,
      collection_id: collection.account.id,
      payer_hint: adapter.payerHint(payer),
      callback_token_sha256: sha256Hex(callbackToken),
    },
    scope,
  );
  const attempt = await findPaymentAttemptById(deps.db, started.attempt_id);
  let result: Awaited<ReturnType<typeof adapter.start>>;
  try {
    result = await adapter.start({
      services: deps,
      credentials,
      attempt,
      payment,
      payer,
      returnUrl: `${deps.config.checkoutBaseUrl}/pay/${payment.id}/return/${attempt.id}`,
      callbackUrl: stkCallbackUrl(deps.config.publicBaseUrl, callbackToken),
    });
  } catch (error) {
    if (error instanceof CurrencyRefusedError) {
      throw await currencyRefused(deps, rail, collection.account, attempt, error);
    }
    const reason = error instanceof RailUnavailableError ? error.message : 'the provider could not be reached';
    if (!(error instanceof RailUnavailableError))
      deps.logger.error({ err: error, attemptId: attempt.id }, 'rail start failed');
    // Only the provider's clear refusal says nothing was done. A lost answer, a timeout or a 5xx
    // may come after the provider acted: an M-Pesa prompt can be on the payer's phone.
    const refused = error instanceof RailUnavailableError && error.refused;
    if (!refused && adapter.unansweredStartMayReachPayer) {
      // Open, its outcome unknown: its callback or the reconciler's queries decide (docs/rails.md, "Unknown answers").
      await recordRailEvent(deps.db, rail, attempt, 'start', 'unknown', reason, deps.clock.now());
      await runSystemTool(
        deps,
        recordPaymentAttempt,
        { payment_id: payment.id, attempt_id: attempt.id, rail, outcome: 'unknown', reason: reason.slice(0, 300) },
        scope,
      );
      return { attemptId: attempt.id, payerUrl: undefined };
    }
    await recordRailEvent(deps.db, rail, attempt, 'start', 'failed', reason, deps.clock.now());
    await runSystemTool(
      deps,
      recordPaymentAttempt,
      { payment_id: payment.id, attempt_id: attempt.id, rail, outcome: 'failed', reason: reason.slice(0, 300) },
      scope,
    );
    throw new AppError(
      'unavailable',
      attemptNotice({ rail, outcome: 'failed', failure_reason: reason }) ?? startFailedNotice(error, refused),
      { cause: error },
    );
  }
  // Started: from here on the attempt is open whatever happens, and is confirmed or ended by the provider.
  await recordProviderStart(deps.db, attempt.id, result.providerReference, result.payerUrl ?? null);
  await recordRailEvent(
    deps.db,
    rail,
    attempt,
    'start',
    'accepted',
    `${rail} started ${result.providerReference}`,
    deps.clock.now(),
  );
  return { attemptId: attempt.id, payerUrl: result.payerUrl };
}

/**
 * What the payer reads when a provider could not start the payment, in place of the provider's own
 * words ("paystack did not answer: fetch failed" stays on the attempt and its rail event, for the
 * merchant and the operator). Only said where nothing can have been charged: the provider refused
 * outright, or its lost answer cannot have reached the payer (Paystack's payer has not seen its
 * page yet). A start that may have reached the payer (an M-Pesa prompt) is never said to be
 * nothing: its attempt stays open and the page says the outcome is being checked.
 */
export const UNREACHABLE =
  "We couldn't reach the payment provider. Nothing was charged — try again in a minute or choose another method.";
export const PROVIDER_ERROR =
  'The payment provider had a problem starting this payment. Nothing was charged — try again in a minute or choose another method.';
export const START_REFUSED =
  'The payment provider could not start this payment. Nothing was charged — choose another method, or try again later.';

function startFailedNotice(error: unknown, refused: boolean): string {
  if (refused) return START_REFUSED;
  return error instanceof RailUnavailableError && error.providerStatus !== undefined ? PROVIDER_ERROR : UNREACHABLE;
}

/**
 * The provider does not take the payment's currency on this collection account, so nothing was
 * started: the rail is no longer offered in that currency there (markCurrencyRefused), the operator
 * is told (an error line naming the collection account and the currency, and a counter), the attempt
 * ends, and the payer is told plainly to pay another way. Returns the payer's error.
 */
async function currencyRefused(
  deps: PaymentRailDeps,
  rail: ProviderRail,
  collection: CollectionAccount,
  attempt: PaymentAttemptRow,
  error: CurrencyRefusedError,
): Promise<AppError> {
  const { currency } = error;
  const now = deps.clock.now();
  await markCurrencyRefused(deps.db, collection.id, currency, now);
  recordRailCurrencyRefused(rail);
  deps.logger.error(
    { rail, collectionId: collection.id, currency, accountId: collection.accountId, livemode: collection.livemode },
    `${rail} refused ${currency} on collection account ${collection.id}: it is no longer offered in ${currency} there. Enable ${currency} on the provider's integration, then set the collection account again (plainpay collection set ${rail}).`,
  );
  await recordRailEvent(deps.db, rail, attempt, 'start', 'refused_currency', error.message, now);
  const payment = await paymentOf(deps.db, attempt);
  await runSystemTool(
    deps,
    recordPaymentAttempt,
    { payment_id: payment.id, attempt_id: attempt.id, rail, outcome: 'failed', reason: error.message.slice(0, 300) },
    scopeOf(payment),
  );
  return new AppError(
    'invalid_request',
    `${PROVIDER_RAILS[rail].label}: not available in ${currency} for this checkout. No money was taken. Please pay another way.`,
    { param: 'rail' },
  );
}

export interface CheckOptions {
  /** What asked: the payer's return, a callback, the reconciler. Shown on the rail event. */
  trigger: 'return' | 'callback' | 'reconcile' | 'payer';
  /**
   * Whether a `charge.success` may pay from this check. Paystack money counts only on its signed
   * event confirmed by verify (docs/rails.md); a verify alone (the payer's return, the reconciler)
   * records failures and abandonment but never pays.
   */
  mayPay: boolean;
  /** Whether an abandoned provider transaction ends the attempt now (the payer came back, or it is stale). */
  abandonIsFinal: boolean;
  /** Fields of an unsigned callback that must agree with the provider's confirmation (M-Pesa's Amount). */
  overlay?: (verdict: ProviderVerdict) => ProviderVerdict;
}

/**
 * Asks the provider how an attempt stands and applies the answer through record_payment_attempt.
 * Returns the verdict, or undefined when the provider could not be asked (nothing changes).
 */
export async function checkAttempt(
  deps: PaymentRailDeps,
  attempt: PaymentAttemptRow,
  options: CheckOptions,
): Promise<ProviderVerdict | undefined> {
  const rail = attempt.rail as ProviderRail;
  const adapter = PROVIDER_RAILS[rail];
  const payment = await paymentOf(deps.db, attempt);
  const collection = await collectionOfAttempt(deps, attempt);
  const now = () => deps.clock.now();
  if (!collection) {
    // Only an attempt from before collection accounts, whose merchant had disconnected the rail.
    await recordRailEvent(
      deps.db,
      rail,
      attempt,
      'verification',
      'unverifiable',
      `${rail}: the attempt names no collection account`,
      now(),
    );
    return undefined;
  }
  await markAttemptChecked(deps.db, attempt.id, now());
  let verdict: ProviderVerdict;
  try {
    verdict = await adapter.verify({ services: deps, credentials: collection.credentials, attempt });
  } catch (error) {
    if (!(error instanceof RailUnavailableError)) throw error;
    deps.logger.warn({ attemptId: attempt.id, rail, err: error.message }, 'provider verification failed; will retry');
    await recordRailEvent(deps.db, rail, attempt, 'verification', 'unavailable', error.message, now());
    return undefined;
  }
  if (options.overlay) verdict = options.overlay(verdict);
  const waiting =
    verdict.outcome === 'pending' ||
    (verdict.outcome === 'abandoned' && !options.abandonIsFinal) ||
    (verdict.outcome === 'succeeded' && !options.mayPay);
  await recordRailEvent(
    deps.db,
    rail,
    attempt,
    'verification',
    waiting ? `awaiting_${verdict.outcome}` : verdict.outcome,
    `${options.trigger}: ${verdict.detail}`,
    now(),
  );
  if (waiting) return verdict;
  const recorded = await runSystemTool(
    deps,
    recordPaymentAttempt,
    {
      payment_id: payment.id,
      attempt_id: attempt.id,
      rail,
      outcome: verdict.outcome,
      reason: verdict.outcome === 'succeeded' ? undefined : verdict.detail.slice(0, 300),
      confirmed: verdict.confirmed,
    },
    scopeOf(payment),
  );
  // Once, by whoever ended the attempt on it (a callback and the reconciler may both have asked).
  if (verdict.operatorAlert && recorded.result === 'ended') {
    alertOperator(deps, rail, verdict.operatorAlert, { attemptId: attempt.id, paymentId: payment.id });
  }
  return verdict;
}

/** What the payer's page says of an attempt that ended without paying, in the rail's own words where it has some. */
export function attemptNotice(
  attempt: Pick<PaymentAttemptRow, 'rail' | 'outcome' | 'failure_reason'>,
): string | undefined {
  const rail = PROVIDER_RAILS[attempt.rail as ProviderRail];
  return rail?.payerNotice?.(attempt);
}

/** The collection account an attempt's money went to: its provider calls use that integration's credentials. */
export async function collectionOfAttempt<R extends ProviderRail>(
  deps: Pick<PaymentRailDeps, 'db' | 'secretBox'>,
  attempt: Pick<PaymentAttemptRow, 'collection_id'>,
): Promise<OpenCollection<R> | undefined> {
  return attempt.collection_id === null ? undefined : collectionById<R>(deps.db, deps.secretBox, attempt.collection_id);
}

/** The payment an attempt pays (it exists: an attempt is made for a payment, and payments are never deleted). */
async function paymentOf(db: Db, attempt: PaymentAttemptRow): Promise<PaymentRow> {
  const payment = await findPaymentById(db, attempt.payment_id);
  if (!payment) throw new Error(`payment ${attempt.payment_id} of attempt ${attempt.id} not found`);
  return payment;
}
