import type { PaymentRow } from '../../db/database.ts';
import type { PaymentAttemptRow } from '../../db/repositories/payment-attempts.ts';
import type { ProviderRail } from '../../db/tables/rails.ts';
import type { RailCredentials } from './collections.ts';
import type { RailServices } from '../deps.ts';
import {
  type ProviderCallOutcome,
  type ProviderOperation,
  type RailAlertReason,
  recordProviderCall,
  recordRailAlert,
} from '../../metrics/metrics.ts';

/**
 * A payer rail (docs/rails.md): how a payer pays a checkout in local currency. Small on purpose:
 *
 * - `takes`: can this rail take this payment (currency, amount granularity)?
 * - `readPayer`: the checkout form's fields this rail needs (Paystack's email, M-Pesa's phone).
 * - `start`: ask the provider to start an attempt for the checkout.
 * - `verify`: ask the provider how the attempt stands: the only source of truth for money in.
 * - `refund`: give a late success back, where the provider has an API for it.
 *
 * Receiving the provider's confirmation (a signed event, an unsigned callback) is the callback
 * routes' job (src/http/routes/rail-callbacks.ts); mapping an outcome to the payment is one system
 * tool every rail uses, the sandbox included: record_payment_attempt (tools/system/).
 */
export interface ProviderRailAdapter<R extends ProviderRail, Payer> {
  name: R;
  /** What the payer reads on the button. */
  label: string;
  /** The currencies the rail can take at all (an integration may have fewer enabled). */
  currencies: readonly string[];
  takes(payment: PaymentRow): boolean;
  /** Validates the payer's form fields; throws AppError naming the field. */
  readPayer(form: URLSearchParams): Payer;
  /** A masked form of the payer's contact, kept on the attempt for finance. */
  payerHint(payer: Payer): string;
  start(args: StartArgs<R, Payer>): Promise<StartedAttempt>;
  verify(args: ProviderArgs<R>): Promise<ProviderVerdict>;
  /**
   * Sends money of a paid attempt back to the payer (all of it without amountMinor); `note` names
   * plainpay's side (a refund or attempt id) so that findRefund can tell whether a send whose answer
   * was lost went through. Returns the provider's refund id. Absent where the provider has no API.
   */
  refund?(args: ProviderArgs<R> & { amountMinor?: bigint; note: string }): Promise<string>;
  /**
   * The refund this attempt's transaction already has with this note, if any: undefined only when
   * the provider's whole listing since `since` (when plainpay decided to refund, before any send)
   * was read and it is not there; anything less is a RailUnavailableError.
   */
  findRefund?(args: ProviderArgs<R> & { note: string; since: Date }): Promise<string | undefined>;
  /** Where a refund the provider accepted stands. */
  refundStatus?(args: ProviderArgs<R> & { refundId: string }): Promise<ProviderRefundState>;
  /**
   * What the provider reports it collected into this collection account in [from, to): its own
   * transaction listing, for the daily reconciliation (docs/reconciliation.md). Every page is read.
   */
  listCollected?(args: CollectionListingArgs<R>): Promise<ProviderCollectedPayment[]>;
  /**
   * What the payer is told about an attempt that ended without paying, in words they can act on
   * (M-Pesa's result codes); undefined for the general notice of its outcome.
   */
  payerNotice?(attempt: Pick<PaymentAttemptRow, 'outcome' | 'failure_reason'>): string | undefined;
  /**
   * Whether a start the provider did not clearly refuse (its answer lost, timed out, or a 5xx) may
   * still have reached the payer (an M-Pesa push can be on the phone although Daraja's answer never
   * came). Then the attempt stays open with its outcome unknown, for the callback or the reconciler
   * to decide, instead of being ended as failed while the payer pays.
   */
  unansweredStartMayReachPayer: boolean;
}

export interface ProviderRefundState {
  /**
   * pending: not final, ask again later. needs_attention: not final either, and the provider will
   * not pay it by itself (Paystack's needs-attention: it needs the payer's bank account).
   */
  outcome: 'pending' | 'needs_attention' | 'succeeded' | 'failed';
  /** The provider's own word for it, shown to finance. */
  providerStatus: string;
}

export interface ProviderArgs<R extends ProviderRail> {
  /** The caller's rail services (the runtime, as the composition roots hand it in). */
  services: RailServices;
  credentials: RailCredentials[R];
  attempt: PaymentAttemptRow;
}

export interface CollectionListingArgs<R extends ProviderRail> {
  services: RailServices;
  credentials: RailCredentials[R];
  from: Date;
  to: Date;
}

/** One payer payment a provider's listing reports as collected (a success, in its own words). */
export interface ProviderCollectedPayment {
  /** The provider's handle on it, as the attempt keeps it (Paystack's reference, M-Pesa's CheckoutRequestID or receipt). */
  reference: string;
  /** The provider's receipt or transaction id, when the listing gives one. */
  receipt?: string;
  /** What the payer was asked, in the currency's minor unit (Paystack's requested_amount). */
  amountMinor: bigint;
  /** What the payer paid on top and the provider kept (fees passed to the customer); 0n when none. */
  payerFeeMinor: bigint;
  currency: string;
  paidAt: Date;
}

export interface StartArgs<R extends ProviderRail, Payer> extends ProviderArgs<R> {
  payment: PaymentRow;
  payer: Payer;
  /** Where the provider sends the payer's browser back (the checkout page's return route). */
  returnUrl: string;
  /** Where the provider posts its result, for rails whose callback URL is given per request. */
  callbackUrl: string;
}

export interface StartedAttempt {
  /** The provider's handle on the attempt (Paystack's reference, M-Pesa's CheckoutRequestID). */
  providerReference: string;
  /** A provider page the payer continues on; undefined when the payer stays on the checkout page. */
  payerUrl?: string;
}

/**
 * What the provider says about an attempt. `pending`: not final yet, ask again later; `failed`: the
 * provider could not put it to the payer (M-Pesa busy).
 */
export interface ProviderVerdict {
  outcome: 'pending' | 'succeeded' | 'declined' | 'abandoned' | 'cancelled' | 'timed_out' | 'failed';
  /**
   * For a success: what the provider itself reports, checked against the attempt. `amount_minor`
   * is what the payer was asked; `payer_fee_minor`, what the payer paid on top and the provider
   * kept (Paystack's fees passed to the customer), absent when none.
   */
  confirmed?: { amount_minor: string; payer_fee_minor?: string; currency: string; reference: string; receipt?: string };
  /** The provider's words, for the attempt's record. */
  detail: string;
  /**
   * The answer says the operator must act (a collection account set up wrong, or full): logged at
   * error level and counted once, when the attempt ends on it.
   */
  operatorAlert?: { reason: RailAlertReason; message: string };
}

/** A provider that did not answer, or answered with an error: nothing is assumed about money. */
export class RailUnavailableError extends Error {
  constructor(
    readonly rail: ProviderRail,
    message: string,
    readonly providerStatus?: number,
    /**
     * Nothing was done: the provider understood the request and said no (a validation refusal), or
     * the request was never sent (no token to send it with). Anything else (a timeout, a 5xx, a
     * 429, a 2xx that did not parse) may have done it.
     */
    readonly refused = false,
  ) {
    super(message);
    this.name = 'RailUnavailableError';
  }
}

/**
 * The provider said the collection account's integration does not take this currency (Paystack's
 * "Currency not supported by merchant"): nothing was started, and nothing will be in that currency
 * until the operator enables it with the provider.
 */
export class CurrencyRefusedError extends RailUnavailableError {
  constructor(
    rail: ProviderRail,
    readonly currency: string,
    message: string,
    providerStatus: number,
  ) {
    super(rail, message, providerStatus, true);
    this.name = 'CurrencyRefusedError';
  }
}

/**
 * One JSON call to a provider with a deadline. Returns the status and the parsed body (or null);
 * a network failure or timeout is a RailUnavailableError. Every call the rails make to a provider
 * passes here, so here it is counted and timed (plainpay_provider_calls_total, by `operation`).
 */
export async function providerCall<R extends ProviderRail>(
  rail: R,
  operation: ProviderOperation<R>,
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown },
  timeoutMs: number,
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const started = performance.now();
  const record = (outcome: ProviderCallOutcome): void =>
    recordProviderCall(rail, operation, outcome, (performance.now() - started) / 1000);
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: {
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    text = await response.text();
  } catch (error) {
    record((error as Error).name === 'TimeoutError' ? 'timeout' : 'network');
    throw new RailUnavailableError(rail, `${rail} did not answer: ${(error as Error).message}`);
  }
  record(statusOutcome(response.status));
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = null;
  }
  return { status: response.status, body };
}

function statusOutcome(status: number): ProviderCallOutcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status >= 400 && status < 500) return 'http_4xx';
  if (status >= 500 && status < 600) return 'http_5xx';
  return 'http_other';
}

/**
 * A provider's answer the operator must act on: an error in the log and a count in /metrics
 * (plainpay_payer_rail_alerts_total), which the operator's alerting watches (docs/operations.md).
 */
export function alertOperator(
  services: Pick<RailServices, 'logger'>,
  rail: ProviderRail,
  alert: NonNullable<ProviderVerdict['operatorAlert']>,
  context: Record<string, string>,
): void {
  services.logger.error({ ...context, rail, alert: alert.reason }, alert.message);
  recordRailAlert(rail, alert.reason);
}
