import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../core/errors.ts';
import type { PaymentRow } from '../../db/database.ts';
import type { PaymentAttemptRow } from '../../db/repositories/payment-attempts.ts';
import {
  CurrencyRefusedError,
  type ProviderRailAdapter,
  type ProviderVerdict,
  providerCall,
  RailUnavailableError,
} from './rail.ts';
import type { ProviderCollectedPayment } from './rail.ts';

/**
 * Paystack (cards, bank transfer, USSD, mobile money) through its redirect flow, as documented at
 * https://paystack.com/docs/payments/accept-payments/ and https://paystack.com/docs/api/transaction/:
 * initialize a transaction with the attempt's reference and the amount in the currency's subunit,
 * send the payer to authorization_url, take them back on callback_url, and count the money only
 * on a `charge.success` event signed with the secret key (x-paystack-signature, HMAC-SHA512 of
 * the raw body) that GET /transaction/verify/:reference confirms.
 */

/** What plainpay accepts through Paystack; each is a two-decimal currency whose subunit is our minor unit. */
export const PAYSTACK_CURRENCIES = new Set(['NGN', 'GHS', 'KES', 'ZAR']);

const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;

/** List Refunds is read this many at a time (OAS: perPage, default 50), at most this many pages. */
const REFUND_PAGE_SIZE = 100;
const REFUND_PAGES = 1000;
/** Paystack's clock and plainpay's may differ: a listing window is widened by this much each side. */
const CLOCK_SKEW_MS = 60 * 60_000;

export interface PaystackPayer {
  email: string;
}

export const paystackRail: ProviderRailAdapter<'paystack', PaystackPayer> = {
  name: 'paystack',
  label: 'Card, bank transfer, USSD or mobile money',
  currencies: [...PAYSTACK_CURRENCIES],
  // Without initialize's answer the payer never gets the authorization URL, so cannot pay on it.
  unansweredStartMayReachPayer: false,
  takes: (payment: PaymentRow) => PAYSTACK_CURRENCIES.has(payment.currency),
  readPayer(form) {
    const email = (form.get('email') ?? '').trim();
    if (email === '')
      throw new AppError('invalid_request', 'Enter your email address: Paystack sends the receipt to it.', {
        param: 'email',
      });
    if (email.length > 254 || !EMAIL.test(email)) {
      throw new AppError('invalid_request', 'Enter a valid email address, like name@example.com.', { param: 'email' });
    }
    return { email };
  },
  payerHint: ({ email }) => {
    const [local = '', domain = ''] = email.split('@');
    return `${local.slice(0, 1)}***@${domain}`.slice(0, 100);
  },

  async start({ services, credentials, attempt, payment, payer, returnUrl }) {
    const reference = requireReference(attempt.provider_reference);
    const { status, body } = await providerCall(
      'paystack',
      'initialize_transaction',
      `${services.config.rails.paystackBaseUrl}/transaction/initialize`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${credentials.secret_key}` },
        body: {
          email: payer.email,
          amount: String(attempt.amount_minor),
          currency: attempt.currency,
          reference,
          callback_url: returnUrl,
          // Paystack's documented field: where the payer goes on "Cancel payment".
          // The merchant whose payment this is: one operator integration collects for every merchant.
          metadata: {
            cancel_action: returnUrl,
            account_id: payment.account_id,
            payment_id: attempt.payment_id,
            attempt_id: attempt.id,
          },
        },
      },
      services.config.rails.timeoutMs,
    );
    const data = body?.data as { authorization_url?: unknown } | undefined;
    if (status !== 200 || body?.status !== true || typeof data?.authorization_url !== 'string') {
      // Currencies are enabled per integration (Paystack's error catalogue: "not enabled for this
      // integration"); the published body, with the 400 integrators report.
      if (
        status >= 400 &&
        status < 500 &&
        body?.status === false &&
        body.message === 'Currency not supported by merchant'
      ) {
        throw new CurrencyRefusedError(
          'paystack',
          payment.currency,
          `Paystack does not take ${payment.currency} on this integration: ${messageOf(body, status)}`,
          status,
        );
      }
      // A refusal said no; anything else (a 5xx, an answer that does not parse) may have created the
      // transaction, but the payer never got its authorization_url, so cannot pay it.
      throw new RailUnavailableError(
        'paystack',
        status >= 400 && status < 500 && body?.status === false
          ? `Paystack refused to start the payment: ${messageOf(body, status)}`
          : `Paystack could not start the payment (${messageOf(body, status)}). No money was taken: please try again.`,
        status,
      );
    }
    return { providerReference: reference, payerUrl: data.authorization_url };
  },

  async verify({ services, credentials, attempt }) {
    const reference = requireReference(attempt.provider_reference);
    const { status, body } = await providerCall(
      'paystack',
      'verify_transaction',
      `${services.config.rails.paystackBaseUrl}/transaction/verify/${encodeURIComponent(reference)}`,
      { method: 'GET', headers: { authorization: `Bearer ${credentials.secret_key}` } },
      services.config.rails.timeoutMs,
    );
    // Never initialized (plainpay stopped between recording the attempt and initializing it):
    // nothing can have been paid on it. Paystack's spec says 404 ("Entity not found"); the live API
    // answers 400 "Transaction reference not found", as integrators report.
    if (
      status === 404 ||
      (status === 400 && body?.status === false && body.message === 'Transaction reference not found')
    ) {
      return { outcome: 'abandoned', detail: `Paystack does not know this reference: ${messageOf(body, status)}` };
    }
    if (status !== 200 || body?.status !== true || !body.data || typeof body.data !== 'object') {
      throw new RailUnavailableError('paystack', `Paystack verify failed: ${messageOf(body, status)}`, status);
    }
    return verdictOf(body.data as Record<string, unknown>);
  },

  async refund({ services, credentials, attempt, amountMinor, note }) {
    const { status, body } = await providerCall(
      'paystack',
      'create_refund',
      `${services.config.rails.paystackBaseUrl}/refund`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${credentials.secret_key}` },
        body: {
          transaction: requireReference(attempt.provider_reference),
          ...(amountMinor === undefined ? {} : { amount: String(amountMinor) }),
          merchant_note: note,
        },
      },
      services.config.rails.timeoutMs,
    );
    const data = body?.data as { id?: unknown } | undefined;
    if (status !== 200 || body?.status !== true || data?.id === undefined) {
      // Only Paystack's own "no" (status false on a 400) says the refund was not made.
      const refused = (status === 400 || status === 422) && body?.status === false;
      throw new RailUnavailableError(
        'paystack',
        `Paystack refused the refund: ${messageOf(body, status)}`,
        status,
        refused,
      );
    }
    return String(data.id);
  },

  /**
   * List Refunds documents only perPage, page, from and to (OAS; the official SDKs): no filter by
   * transaction, and an integration may hold other systems' refunds. So every refund created from
   * just before plainpay's first send until now is read, page by page, and plainpay's is the one
   * with its note on this attempt's transaction.
   */
  async findRefund({ services, credentials, attempt, note, since }) {
    const window = (at: number) => encodeURIComponent(new Date(at).toISOString());
    const from = window(since.getTime() - CLOCK_SKEW_MS);
    const to = window(services.clock.now().getTime() + CLOCK_SKEW_MS);
    for (let page = 1; page <= REFUND_PAGES; page += 1) {
      const { status, body } = await providerCall(
        'paystack',
        'list_refunds',
        `${services.config.rails.paystackBaseUrl}/refund?perPage=${REFUND_PAGE_SIZE}&page=${page}&from=${from}&to=${to}`,
        { method: 'GET', headers: { authorization: `Bearer ${credentials.secret_key}` } },
        services.config.rails.timeoutMs,
      );
      if (status !== 200 || body?.status !== true || !Array.isArray(body.data)) {
        throw new RailUnavailableError('paystack', `Paystack did not list refunds: ${messageOf(body, status)}`, status);
      }
      const refunds = body.data as Array<Record<string, unknown> | null>;
      const found = refunds.find((r) => r?.merchant_note === note && refundOf(r, attempt));
      if (found?.id !== undefined && found.id !== null) return String(found.id);
      const pageCount = (body.meta as { pageCount?: unknown } | undefined)?.pageCount;
      // The last page: as Paystack counts them, or (without a count) the first empty one.
      if (typeof pageCount === 'number' ? page >= pageCount : refunds.length === 0) return undefined;
    }
    throw new RailUnavailableError(
      'paystack',
      `Paystack lists more than ${REFUND_PAGES * REFUND_PAGE_SIZE} refunds since ${since.toISOString()}: not looked further`,
    );
  },

  async refundStatus({ services, credentials, refundId }) {
    const { status, body } = await providerCall(
      'paystack',
      'fetch_refund',
      `${services.config.rails.paystackBaseUrl}/refund/${encodeURIComponent(refundId)}`,
      { method: 'GET', headers: { authorization: `Bearer ${credentials.secret_key}` } },
      services.config.rails.timeoutMs,
    );
    const data = body?.data as { status?: unknown } | undefined;
    if (status !== 200 || body?.status !== true || typeof data?.status !== 'string') {
      throw new RailUnavailableError(
        'paystack',
        `Paystack did not show refund ${refundId}: ${messageOf(body, status)}`,
        status,
      );
    }
    // Paystack's refund statuses (https://paystack.com/docs/payments/refunds/): pending, processing,
    // needs-attention (it cannot go back to the payment instrument: it waits for a retry with the
    // payer's bank account), processed, failed.
    const providerStatus = data.status.slice(0, 40);
    if (data.status === 'processed') return { outcome: 'succeeded', providerStatus };
    if (data.status === 'failed') return { outcome: 'failed', providerStatus };
    if (data.status === 'needs-attention') return { outcome: 'needs_attention', providerStatus };
    return { outcome: 'pending', providerStatus };
  },
};

/**
 * Whether a listed refund is of this attempt's transaction: List Refunds gives the transaction's
 * integer id (the attempt's receipt, from verify), and the OpenAPI spec its reference too.
 */
function refundOf(refund: Record<string, unknown>, attempt: PaymentAttemptRow): boolean {
  const transaction = refund.transaction;
  const id =
    typeof transaction === 'object' && transaction !== null ? (transaction as { id?: unknown }).id : transaction;
  if (attempt.provider_receipt !== null && id !== undefined && id !== null && String(id) === attempt.provider_receipt) {
    return true;
  }
  return (
    typeof refund.transaction_reference === 'string' && refund.transaction_reference === attempt.provider_reference
  );
}

/** Paystack's transaction statuses (verify's data.status) as an attempt outcome. */
function verdictOf(data: Record<string, unknown>): ProviderVerdict {
  const status = String(data.status ?? '');
  const detail = `Paystack: ${status}${data.gateway_response ? ` (${String(data.gateway_response)})` : ''}`;
  switch (status) {
    case 'success':
      return {
        outcome: 'succeeded',
        detail,
        confirmed: {
          ...paystackAmounts(data),
          currency: String(data.currency ?? ''),
          reference: String(data.reference ?? ''),
          receipt: data.id === undefined ? undefined : String(data.id),
        },
      };
    case 'failed':
    case 'reversed':
      return { outcome: 'declined', detail };
    // Initialized and not completed: the payer left, or has not finished yet.
    case 'abandoned':
      return { outcome: 'abandoned', detail };
    default:
      // ongoing, pending, processing, queued: not final.
      return { outcome: 'pending', detail };
  }
}

/**
 * What a Paystack transaction asked of the payer, and the fee the payer paid on top. `amount` is
 * what the payer was charged; with fees passed to the customer it is `requested_amount` (what was
 * initialized) plus Paystack's fee (Paystack's own verify sample: 40333 = 30050 + 10283). So the
 * payment is judged on `requested_amount` (on `amount` where Paystack gives none) and the rest is
 * the payer's fee. A charge below what was asked is reported as charged, so that it is flagged.
 */
export function paystackAmounts(data: Record<string, unknown>): { amount_minor: string; payer_fee_minor?: string } {
  const read = askedAndFee(data);
  if (!read) return { amount_minor: String(data.amount ?? '') };
  return read.fee === 0n
    ? { amount_minor: String(read.asked) }
    : { amount_minor: String(read.asked), payer_fee_minor: String(read.fee) };
}

/**
 * The one reading of a Paystack transaction's amounts (verify's data, a listed transaction): what
 * was asked and the payer's fee on top; undefined when the amounts are unreadable, or the charge is
 * below what was asked.
 */
function askedAndFee(data: Record<string, unknown>): { asked: bigint; fee: bigint } | undefined {
  const charged = wholeMinor(data.amount);
  const asked =
    data.requested_amount === undefined || data.requested_amount === null ? charged : wholeMinor(data.requested_amount);
  if (charged === undefined || asked === undefined || charged < asked) return undefined;
  return { asked, fee: charged - asked };
}

/** A subunit amount as Paystack sends it (an integer, or its digits as a string); undefined otherwise. */
function wholeMinor(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^\d{1,30}$/.test(value)) return BigInt(value);
  return undefined;
}

function requireReference(reference: string | null): string {
  if (!reference) throw new Error('a Paystack attempt always has its reference');
  return reference;
}

/** Checks x-paystack-signature: HMAC-SHA512 of the raw body, hex, keyed with the secret key. */
export function paystackSignatureValid(secretKey: string, rawBody: string, header: string | undefined): boolean {
  if (typeof header !== 'string' || !/^[0-9a-f]{128}$/i.test(header)) return false;
  const expected = createHmac('sha512', secretKey).update(rawBody, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(header, 'hex'));
}

function messageOf(body: Record<string, unknown> | null, status: number): string {
  const message = typeof body?.message === 'string' ? body.message : undefined;
  return message ? `${message} (HTTP ${status})` : `HTTP ${status}`;
}

// ---------------------------------------------------------------------------------------------------
// Reconciliation listing (docs/reconciliation.md). Its own section, apart from the payer flow
// above: the daily reconciliation reads it, nothing in the payer flow does.

/**
 * List Transactions (GET /transaction, PaystackOSS/openapi dist/paystack.yaml) documents `from` and
 * `to` only as "The start date" and "The end date": they are read as the transaction's creation,
 * the stricter reading, and the listing starts this far before the window so that a transaction
 * created the day before and paid inside the window is still listed. Rows are kept by their paid_at.
 */
const LISTING_LOOKBACK_MS = 24 * 3600_000;
/** Snake case on this endpoint (`per_page`), unlike `perPage` on /refund and /settlement (OAS). */
const LISTING_PER_PAGE = 100;
/** More pages than this (100 000 transactions in one window) is taken for paging that does not end. */
const LISTING_MAX_PAGES = 1000;
/**
 * Money Paystack collected: `success`, and `reversed`, a success later refunded or charged back
 * (the "Transaction statuses" table of paystack.com/docs/payments/verify-payments/).
 */
const COLLECTED_STATUSES = new Set(['success', 'reversed']);

paystackRail.listCollected = async ({ services, credentials, from, to }) => {
  const collected: ProviderCollectedPayment[] = [];
  const since = new Date(from.getTime() - LISTING_LOOKBACK_MS);
  for (let page = 1; page <= LISTING_MAX_PAGES; page++) {
    const query = new URLSearchParams({
      from: since.toISOString(),
      to: to.toISOString(),
      per_page: String(LISTING_PER_PAGE),
      page: String(page),
    });
    const { status, body } = await providerCall(
      'paystack',
      'list_transactions',
      `${services.config.rails.paystackBaseUrl}/transaction?${query}`,
      { method: 'GET', headers: { authorization: `Bearer ${credentials.secret_key}` } },
      services.config.rails.timeoutMs,
    );
    if (status !== 200 || body?.status !== true || !Array.isArray(body.data)) {
      throw new RailUnavailableError(
        'paystack',
        `Paystack did not list transactions: ${messageOf(body, status)}`,
        status,
      );
    }
    for (const item of body.data as unknown[]) {
      const row = collectedRow(item);
      if (row && row.paidAt >= from && row.paidAt < to) collected.push(row);
    }
    // Page-style meta carries pageCount (OAS TransactionListResponse); without it, an empty page ends the list.
    const pageCount = (body.meta as { pageCount?: unknown } | undefined)?.pageCount;
    if (body.data.length === 0 || (typeof pageCount === 'number' && page >= pageCount)) return collected;
  }
  throw new RailUnavailableError('paystack', `Paystack listed more than ${LISTING_MAX_PAGES} pages of transactions`);
};

/**
 * One listed transaction as collected money, or undefined when it is not (abandoned, failed, …),
 * its amounts read as verify's are (askedAndFee). A collected row plainpay cannot read fails the
 * listing rather than drop money from the count.
 */
function collectedRow(item: unknown): ProviderCollectedPayment | undefined {
  const t = (item ?? {}) as Record<string, unknown>;
  if (!COLLECTED_STATUSES.has(String(t.status))) return undefined;
  const amounts = askedAndFee(t);
  const paidAt = new Date(String(t.paid_at ?? t.paidAt ?? ''));
  if (
    amounts === undefined ||
    typeof t.reference !== 'string' ||
    typeof t.currency !== 'string' ||
    Number.isNaN(paidAt.getTime())
  ) {
    throw new RailUnavailableError(
      'paystack',
      `Paystack listed a ${String(t.status)} transaction plainpay cannot read (reference ${String(t.reference)})`,
    );
  }
  return {
    reference: t.reference,
    receipt: t.id === undefined || t.id === null ? undefined : String(t.id),
    amountMinor: amounts.asked,
    payerFeeMinor: amounts.fee,
    currency: t.currency,
    paidAt,
  };
}
