import type { Db } from '../db/database.ts';
import { listOperatorCollectionsInUse } from '../db/repositories/collection-accounts.ts';
import {
  type CollectedAttempt,
  listCollectedAttemptsByHandle,
  listCollectedAttemptsWithoutReceipt,
} from '../db/repositories/payment-attempts.ts';
import { listPaymentsBookedToCollection, type PaymentBookedToCollection } from '../db/repositories/payments.ts';
import { listPaymentsWithConfirmedAuthorization } from '../db/repositories/x402-authorizations.ts';
import type { ProviderRail } from '../db/tables/rails.ts';
import { USDC_RAIL } from '../db/tables/x402.ts';
import type { RailServices } from '../payments/deps.ts';
import { PROVIDER_RAILS } from '../payments/rails/attempts.ts';
import { collectionById, creditsWithoutOperatorCollection } from '../payments/rails/collections.ts';
import { type ProviderCollectedPayment, RailUnavailableError } from '../payments/rails/rail.ts';
import type { ReconciliationServices } from './services.ts';
import type { DayWindow } from './day.ts';
import { line, type ReconciliationLine } from './lines.ts';

/**
 * The first two sides of the reconciliation (docs/reconciliation.md): what the providers list as
 * collected into the operator's collection accounts, against what the ledger booked to collection
 * (payment_received, by the day the payment was paid). Reads only.
 */

/**
 * A provider stamps a payment when it completes, plainpay when it hears of it (an M-Pesa payment
 * can be confirmed by the status query a minute later): the listing reaches this far either side
 * of the day to find the day's payments, and rows outside the day are left to that day's report.
 */
export const LISTING_MARGIN_MS = 3600_000;
/** How long after an attempt ended a payment it started may still complete on the provider's side. */
const LATE_COMPLETION_MS = 5 * 60_000;
/** How far the provider's clock (and its whole-second stamps) may be from plainpay's. */
const CLOCK_SKEW_MS = 60_000;
/** Bind parameters per `in (…)` list, well under the 65 535 a statement may carry. */
const CHUNK = 1000;

/** One side's count and amount, per mode, currency and rail. Amounts as decimal strings of minor units. */
export interface CollectionTotals {
  livemode: boolean;
  currency: string;
  rail: string;
  /** What the provider listed as collected that day; null when it was not listed (or has no provider). */
  provider_count: number | null;
  provider_amount_minor: string | null;
  /** What payers paid on top, kept by the provider (fees passed to the customer). */
  payer_fees_minor: string | null;
  ledger_count: number;
  ledger_amount_minor: string;
}

/** How each collection account's listing went. */
export interface ListingStatus {
  collection_id: string;
  rail: ProviderRail;
  livemode: boolean;
  listed: boolean;
  /** Why it was not listed. */
  reason: string | null;
  /** Rows of the day. */
  rows: number;
  /** Of those, rows plainpay never started (the integration may serve other systems too). */
  not_from_plainpay: number;
}

export interface CollectionsSide {
  lines: ReconciliationLine[];
  totals: CollectionTotals[];
  listings: ListingStatus[];
}

interface Collection {
  id: string;
  rail: ProviderRail;
  livemode: boolean;
}

export async function reconcileCollections(
  services: Pick<ReconciliationServices, 'db' | 'secretBox'> & RailServices,
  window: DayWindow,
): Promise<CollectionsSide> {
  const { db } = services;
  const booked = await listPaymentsBookedToCollection(db, window);
  const lines: ReconciliationLine[] = [];
  const listings: ListingStatus[] = [];
  const totals = new Map<string, CollectionTotals>();
  const totalsOf = (livemode: boolean, currency: string, rail: string): CollectionTotals => {
    const key = `${livemode}|${currency}|${rail}`;
    let t = totals.get(key);
    if (!t) {
      t = {
        livemode,
        currency,
        rail,
        provider_count: null,
        provider_amount_minor: null,
        payer_fees_minor: null,
        ledger_count: 0,
        ledger_amount_minor: '0',
      };
      totals.set(key, t);
    }
    return t;
  };
  for (const p of booked) {
    const t = totalsOf(p.livemode, p.currency, p.rail ?? 'none');
    t.ledger_count += 1;
    t.ledger_amount_minor = (BigInt(t.ledger_amount_minor) + p.amount_minor).toString();
  }
  // USDC paid in has no provider listing: the chain is its provider, and what it confirmed into the
  // treasury is what the usdc rail collected (the treasury itself is checked against the chain).
  const onChain = await confirmedUsdcPayments(
    db,
    booked.filter((p) => p.rail === USDC_RAIL).map((p) => p.id),
  );
  for (const p of booked.filter((b) => b.rail === USDC_RAIL)) {
    const t = totalsOf(p.livemode, p.currency, USDC_RAIL);
    const confirmed = onChain.has(p.id);
    t.provider_count = (t.provider_count ?? 0) + (confirmed ? 1 : 0);
    t.provider_amount_minor = (BigInt(t.provider_amount_minor ?? '0') + (confirmed ? p.amount_minor : 0n)).toString();
    t.payer_fees_minor ??= '0';
  }

  // Booked payments a provider row (or an unreadable listing) accounted for.
  const accounted = new Set<string>();
  const inDay = (row: ProviderCollectedPayment) => row.paidAt >= window.from && row.paidAt < window.to;
  for (const collection of await collectionsInUse(db, window, booked)) {
    const mine = booked.filter((p) => p.collection_id === collection.id);
    const mineById = new Map(mine.map((p) => [p.id, p]));
    const listing = await listingOf(services, collection, window);
    if ('reason' in listing) {
      listings.push({ ...status(collection), listed: false, reason: listing.reason, rows: 0, not_from_plainpay: 0 });
      lines.push(...unconfirmed(collection, mine, listing.reason));
      for (const p of mine) accounted.add(p.id);
      continue;
    }
    const dayRows = listing.rows.filter(inDay);
    for (const row of dayRows) {
      const t = totalsOf(collection.livemode, row.currency, collection.rail);
      t.provider_count = (t.provider_count ?? 0) + 1;
      t.provider_amount_minor = (BigInt(t.provider_amount_minor ?? '0') + row.amountMinor).toString();
      t.payer_fees_minor = (BigInt(t.payer_fees_minor ?? '0') + row.payerFeeMinor).toString();
    }
    const attempts = await attemptsOfRows(db, collection, listing.rows, window);
    let notFromPlainpay = 0;
    for (const row of listing.rows) {
      const attempt = attempts.get(row);
      if (!attempt) {
        if (inDay(row)) notFromPlainpay += 1;
        continue;
      }
      const payment = mineById.get(attempt.payment_id);
      if (payment && attempt.outcome === 'succeeded' && !attempt.late) {
        accounted.add(payment.id);
        if (row.amountMinor !== payment.amount_minor || row.currency !== payment.currency) {
          lines.push(amountDiffers(collection, payment, row));
        }
        continue;
      }
      // A success credited on a neighbouring day is that day's to compare.
      if (!inDay(row) || (attempt.booked && attempt.outcome === 'succeeded' && !attempt.late)) continue;
      const why = notBookedBecause(attempt);
      if (why) lines.push(notBooked(collection, row, attempt, why));
    }
    for (const p of mine) {
      if (!accounted.has(p.id)) {
        lines.push(notAtProvider(collection, p));
        accounted.add(p.id);
      }
    }
    listings.push({
      ...status(collection),
      listed: true,
      reason: null,
      rows: dayRows.length,
      not_from_plainpay: notFromPlainpay,
    });
  }
  lines.push(...(await creditLines(db, window)));
  return { lines, totals: [...totals.values()], listings };
}

/** Why a provider success is not (yet) booked, or undefined when that is as it should be. */
function notBookedBecause(attempt: CollectedAttempt): string | undefined {
  if (attempt.outcome === 'succeeded' && attempt.late) {
    // A late success goes back to the payer; once it has, nothing of it is left to book.
    if (attempt.refund_status === 'refunded') return undefined;
    return attempt.refund_status === 'manual'
      ? 'a late success, to be reversed by hand in the M-Pesa portal (docs/rails.md, "Late successes")'
      : `a late success whose refund is ${attempt.refund_status ?? 'not started'}`;
  }
  if (attempt.outcome === 'succeeded') return 'the payment is paid, but settlement has not booked it yet';
  return `plainpay recorded attempt ${attempt.id} as ${attempt.outcome}${attempt.failure_reason ? ` (${attempt.failure_reason})` : ''}`;
}

async function listingOf(
  services: Pick<ReconciliationServices, 'db' | 'secretBox'> & RailServices,
  collection: Collection,
  window: DayWindow,
): Promise<{ rows: ProviderCollectedPayment[] } | { reason: string }> {
  const adapter = PROVIDER_RAILS[collection.rail];
  if (!adapter.listCollected) return { reason: `${collection.rail} has no listing of what it collected` };
  const opened = await collectionById(services.db, services.secretBox, collection.id);
  if (!opened) throw new Error(`collection account ${collection.id} vanished`);
  try {
    const rows = await adapter.listCollected({
      services,
      credentials: opened.credentials,
      from: new Date(window.from.getTime() - LISTING_MARGIN_MS),
      to: new Date(window.to.getTime() + LISTING_MARGIN_MS),
    });
    return { rows };
  } catch (error) {
    if (error instanceof RailUnavailableError) return { reason: error.message };
    throw error;
  }
}

/**
 * The operator's collection accounts that could have collected on the day: active during it, or
 * named by one of its booked payments. A merchant-owned one is not the operator's money to list;
 * payments credited through one are the collection invariant's lines.
 */
async function collectionsInUse(
  db: Db,
  window: DayWindow,
  booked: readonly PaymentBookedToCollection[],
): Promise<Collection[]> {
  const named = [
    ...new Set(booked.flatMap((p) => (p.owner === 'operator' && p.collection_id ? [p.collection_id] : []))),
  ];
  return listOperatorCollectionsInUse(db, window, named);
}

/** Of these payments, those paid by an x402 authorization whose transfer is confirmed on chain. */
async function confirmedUsdcPayments(db: Db, paymentIds: readonly string[]): Promise<Set<string>> {
  const confirmed = new Set<string>();
  for (let i = 0; i < paymentIds.length; i += CHUNK) {
    const rows = await listPaymentsWithConfirmedAuthorization(db, paymentIds.slice(i, i + CHUNK));
    for (const row of rows) confirmed.add(row.payment_id);
  }
  return confirmed;
}

/**
 * The attempt each listed row is, by the handle the attempt keeps (Paystack's reference, M-Pesa's
 * receipt). A row named by its receipt alone (an M-Pesa payment whose callback plainpay never
 * heard has no receipt on its attempt) is paired with the one attempt of the collection account
 * that has no receipt, asked the same amount and was open when the row completed (give or take
 * the clocks' skew), when exactly one such attempt fits it and it fits no other row.
 */
async function attemptsOfRows(
  db: Db,
  collection: Collection,
  rows: readonly ProviderCollectedPayment[],
  window: DayWindow,
): Promise<Map<ProviderCollectedPayment, CollectedAttempt>> {
  const handles = [...new Set(rows.flatMap((r) => [r.reference, ...(r.receipt ? [r.receipt] : [])]))];
  const byHandle = new Map<string, CollectedAttempt>();
  for (let i = 0; i < handles.length; i += CHUNK) {
    const chunk = handles.slice(i, i + CHUNK);
    const found = await listCollectedAttemptsByHandle(db, collection.id, chunk);
    for (const a of found) {
      if (a.provider_reference) byHandle.set(a.provider_reference, a);
      if (a.provider_receipt) byHandle.set(a.provider_receipt, a);
    }
  }
  const matched = new Map<ProviderCollectedPayment, CollectedAttempt>();
  const byReceiptOnly: ProviderCollectedPayment[] = [];
  for (const row of rows) {
    const attempt = byHandle.get(row.reference) ?? (row.receipt ? byHandle.get(row.receipt) : undefined);
    if (attempt) matched.set(row, attempt);
    else if (row.receipt === row.reference) byReceiptOnly.push(row);
  }
  if (byReceiptOnly.length === 0) return matched;

  const amounts = [...new Set(byReceiptOnly.map((r) => r.amountMinor))];
  const since = new Date(window.from.getTime() - LISTING_MARGIN_MS - LATE_COMPLETION_MS - CLOCK_SKEW_MS);
  const open = await listCollectedAttemptsWithoutReceipt(
    db,
    collection.id,
    amounts,
    since,
    new Date(window.to.getTime() + LISTING_MARGIN_MS),
  );
  const fits = (row: ProviderCollectedPayment, a: CollectedAttempt) =>
    a.amount_minor === row.amountMinor &&
    row.paidAt.getTime() >= a.created_at.getTime() - CLOCK_SKEW_MS &&
    row.paidAt.getTime() <= (a.completed_at?.getTime() ?? Number.POSITIVE_INFINITY) + LATE_COMPLETION_MS;
  for (const row of byReceiptOnly) {
    const candidates = open.filter((a) => fits(row, a));
    const [only] = candidates;
    if (candidates.length === 1 && only && byReceiptOnly.filter((r) => fits(r, only)).length === 1) {
      matched.set(row, only);
    }
  }
  return matched;
}

function status(collection: Collection) {
  return { collection_id: collection.id, rail: collection.rail, livemode: collection.livemode };
}

function amountDiffers(
  collection: Collection,
  payment: PaymentBookedToCollection,
  row: ProviderCollectedPayment,
): ReconciliationLine {
  return line('amount_differs', {
    ...of(collection, payment),
    currency: payment.currency,
    reference: row.reference,
    source_amount_minor: row.amountMinor,
    ledger_amount_minor: payment.amount_minor,
    detail: `${collection.rail} lists ${row.amountMinor} ${row.currency} collected for ${row.reference}; the ledger booked ${payment.amount_minor} ${payment.currency}`,
  });
}

function notBooked(
  collection: Collection,
  row: ProviderCollectedPayment,
  attempt: CollectedAttempt,
  why: string,
): ReconciliationLine {
  return line('provider_not_booked', {
    livemode: collection.livemode,
    currency: row.currency,
    account_id: attempt.account_id,
    payment_id: attempt.payment_id,
    rail: collection.rail,
    collection_id: collection.id,
    reference: row.reference,
    source_amount_minor: row.amountMinor,
    detail: `${collection.rail} collected ${row.reference} at ${row.paidAt.toISOString()}: ${why}`,
  });
}

function notAtProvider(collection: Collection, payment: PaymentBookedToCollection): ReconciliationLine {
  const handle = payment.provider_receipt ?? payment.provider_reference;
  return line('booked_not_at_provider', {
    ...of(collection, payment),
    currency: payment.currency,
    reference: handle,
    ledger_amount_minor: payment.amount_minor,
    detail: `the ledger booked ${payment.id}, but ${collection.rail} does not list ${handle ?? 'its attempt'} as collected`,
  });
}

/** The day's payments of a collection account whose listing could not be read (one line for the account when none). */
function unconfirmed(
  collection: Collection,
  payments: readonly PaymentBookedToCollection[],
  reason: string,
): ReconciliationLine[] {
  const detail = `${collection.rail} (${collection.id}) could not be listed: ${reason}`;
  if (payments.length === 0) {
    return [
      line('source_unavailable', {
        livemode: collection.livemode,
        currency: PROVIDER_RAILS[collection.rail].currencies.join(','),
        rail: collection.rail,
        collection_id: collection.id,
        detail,
      }),
    ];
  }
  return payments.map((p) =>
    line('source_unavailable', {
      ...of(collection, p),
      currency: p.currency,
      reference: p.provider_receipt ?? p.provider_reference,
      ledger_amount_minor: p.amount_minor,
      detail,
    }),
  );
}

function of(collection: Collection, payment: PaymentBookedToCollection) {
  return {
    livemode: payment.livemode,
    account_id: payment.account_id,
    payment_id: payment.id,
    rail: collection.rail,
    collection_id: collection.id,
  };
}

/** The collection invariant, for the payments paid on the day (collections.ts holds the rule). */
async function creditLines(db: Db, window: DayWindow): Promise<ReconciliationLine[]> {
  const credits = await creditsWithoutOperatorCollection(db, { paid: window });
  return credits.map((c) =>
    line('credit_without_operator_collection', {
      livemode: c.livemode,
      currency: c.currency,
      account_id: c.account_id,
      payment_id: c.id,
      ledger_amount_minor: c.amount_minor,
      detail: `${c.id} was credited, but no success of it was collected into an operator-owned collection account`,
    }),
  );
}
