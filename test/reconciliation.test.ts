// The daily three-way reconciliation (docs/reconciliation.md) against the providers' fakes and the
// embedded devnet: a clean day reports no difference, and each kind of difference injected is named
// with its rows. The schedule, the alert, /metrics, the CLI, the operator API and the dashboard are
// in reconciliation.operator.test.ts.

import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { keccak256, toHex } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import { runSystemTool } from '../src/pipeline/system-runs.ts';
import { reconcileRailAttempts } from '../src/payments/rails/reconcile.ts';
import { dayWindow } from '../src/reconciliation/day.ts';
import type { ReconciliationLine } from '../src/reconciliation/lines.ts';
import { reconcileDay } from '../src/reconciliation/reconcile.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { recordPaymentAttempt } from '../tools/system/record-payment-attempt.ts';
import { afterFile } from './support/after-file.ts';
import { testAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import {
  MPESA_APP,
  operatorCollects,
  PAYSTACK_MERCHANT_OWN_KEY,
  PAYSTACK_TEST_KEY,
  type RailsWorld,
  railsWorld,
} from './support/rails.ts';
import { dayOf, registerPull } from './support/reconciliation.ts';
import { payoutAddresses, waitUntil } from './support/settlement.ts';

let w: RailsWorld;

beforeAll(async () => {
  w = await railsWorld({ merchantName: 'Recon Stores' });
  await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
  await operatorCollects(w.runtime, 'mpesa', MPESA_APP);
  await registerPull(w.daraja, MPESA_APP);
  // Paid payments are booked (payment_received) and settled as they would be in production.
  const worker = startSettlementWorker(w.runtime, { pollIntervalMs: 20 });
  afterFile(() => worker.stop());
}, 60_000);

const form = (id: string, fields: Record<string, string>) =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: new URLSearchParams(fields).toString(),
  });

const attemptOf = (paymentId: string) =>
  w.runtime.db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow();

/** The payer starts Paystack on the checkout page; the Paystack reference. */
async function startPaystack(paymentId: string): Promise<string> {
  expect((await form(paymentId, { rail: 'paystack', email: 'ada@example.com' })).statusCode).toBe(303);
  return (await attemptOf(paymentId)).provider_reference!;
}

/** A payment created, paid on Paystack (its signed event heard) and booked by settlement. */
async function paidOnPaystack(apiKey: string, body: Record<string, unknown> = {}) {
  const p = await createPayment(w.api, apiKey, { amount: 7500, currency: 'NGN', ...body });
  const reference = await startPaystack(p.id);
  await w.paystack.complete(reference, 'success');
  return { id: p.id as string, reference, ...(await booked(p.id)) };
}

/** Waits until settlement booked the payment and settled it; its paid day. */
async function booked(paymentId: string): Promise<{ day: string }> {
  await waitUntil(
    `${paymentId} settled`,
    async () => (await findPaymentById(w.runtime.db, paymentId))?.status === 'settled',
  );
  return { day: dayOf((await findPaymentById(w.runtime.db, paymentId))!.paid_at!) };
}

async function report(day: string) {
  return reconcileDay(w.runtime, dayWindow(day));
}

const about = (lines: readonly ReconciliationLine[], paymentId: string) =>
  lines.filter((l) => l.payment_id === paymentId);

describe('a clean day', () => {
  it('reports zero differences, and the same totals on each side', async () => {
    const card = await paidOnPaystack(w.merchant.apiKey, { payout_address: payoutAddresses(1)[0] });
    const kes = await createPayment(w.api, w.merchant.apiKey, { amount: 1000, currency: 'KES' });
    expect((await form(kes.id, { rail: 'mpesa', phone: '0712 000 001' })).statusCode).toBe(303);
    await w.daraja.phone.accept((await w.daraja.waitForPush('254712000001')).checkoutRequestId);
    await booked(kes.id);

    const { lines, summary } = await report(card.day);
    expect(lines).toEqual([]);
    const totals = (rail: string, currency: string) =>
      summary.collections.find((t) => t.rail === rail && t.currency === currency && !t.livemode);
    expect(totals('paystack', 'NGN')).toMatchObject({
      provider_count: 1,
      provider_amount_minor: '750000',
      ledger_count: 1,
      ledger_amount_minor: '750000',
    });
    expect(totals('mpesa', 'KES')).toMatchObject({
      provider_count: 1,
      provider_amount_minor: '100000',
      ledger_count: 1,
      ledger_amount_minor: '100000',
    });
    expect(summary.listings.every((l) => l.listed)).toBe(true);
    // The on-chain settlement of the day, checked against the chain; the treasury covers what it owes.
    expect(summary.settlements).toEqual([
      expect.objectContaining({ livemode: false, kind: 'payment_settlement', payment_currency: 'NGN', count: 1 }),
    ]);
    expect(summary.treasury).toMatchObject({ shortfall_minor: '0' });
    expect(summary.treasury!.cover_ratio).toBeGreaterThan(1);
  });

  it('matches an M-Pesa payment confirmed by the status query alone (no receipt heard) by its amount and time', async () => {
    const kes = await createPayment(w.api, w.merchant.apiKey, { amount: 2300, currency: 'KES' });
    expect((await form(kes.id, { rail: 'mpesa', phone: '0712 000 002' })).statusCode).toBe(303);
    await w.daraja.phone.accept((await w.daraja.waitForPush('254712000002')).checkoutRequestId, { callback: false });
    // The reconciler asks the STK query about attempts open 30 s; the clock goes back after, so that
    // plainpay's and the fake's clocks agree again.
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    w.runtime.clock.advance(-31_000);
    const { day } = await booked(kes.id);
    expect((await attemptOf(kes.id)).provider_receipt).toBeNull();
    expect(about((await report(day)).lines, kes.id)).toEqual([]);
  });
});

describe('each difference is a named line with its rows', () => {
  it('a provider success the ledger lacks: paid on Paystack, its event never heard', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 4100, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, 'http://127.0.0.1:9/nowhere');
    try {
      await w.paystack.complete(reference, 'success');
    } finally {
      w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${w.apiUrl}/hooks/paystack`);
    }
    const paidAt = new Date(w.paystack.transactions.get(reference)!.paid_at!);
    expect(about((await report(dayOf(paidAt))).lines, p.id)).toEqual([
      expect.objectContaining({
        kind: 'provider_not_booked',
        livemode: false,
        currency: 'NGN',
        account_id: w.merchant.accountId,
        rail: 'paystack',
        reference,
        source_amount_minor: 410000n,
        ledger_amount_minor: null,
      }),
    ]);
  });

  it('a ledger payment the provider does not know: credited on a success Paystack never had', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 5200, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    // As if verify had said success: the payer never paid (Paystack keeps it abandoned).
    const attempt = await attemptOf(p.id);
    await runSystemTool(
      w.runtime,
      recordPaymentAttempt,
      {
        payment_id: p.id,
        attempt_id: attempt.id,
        rail: 'paystack',
        outcome: 'succeeded',
        confirmed: { amount_minor: '520000', currency: 'NGN', reference },
      },
      { accountId: w.merchant.accountId, livemode: false },
    );
    const { day } = await booked(p.id);
    expect(about((await report(day)).lines, p.id)).toEqual([
      expect.objectContaining({
        kind: 'booked_not_at_provider',
        rail: 'paystack',
        reference,
        source_amount_minor: null,
        ledger_amount_minor: 520000n,
      }),
    ]);
  });

  it('an amount that differs: the provider lists another amount than the ledger booked', async () => {
    const p = await paidOnPaystack(w.merchant.apiKey, { amount: 6100 });
    // Paystack's own record of the transaction says another amount was asked and charged.
    Object.assign(w.paystack.transactions.get(p.reference)!, { amount: 600000, requested_amount: 600000 });
    expect(about((await report(p.day)).lines, p.id)).toEqual([
      expect.objectContaining({
        kind: 'amount_differs',
        reference: p.reference,
        source_amount_minor: 600000n,
        ledger_amount_minor: 610000n,
      }),
    ]);
  });

  it('a payment credited without an operator-owned collection account', async () => {
    const own = await testAccount(w.runtime, { name: 'Own Collection Ltd' });
    const collection = await operatorCollects(
      w.runtime,
      'paystack',
      { secret_key: PAYSTACK_MERCHANT_OWN_KEY },
      { accountId: own.accountId },
    );
    const p = await paidOnPaystack(own.apiKey, { amount: 3300 });
    // The account that collected it turns out to be the merchant's own: its money never reached the operator.
    const setOwner = (owner: 'operator' | 'merchant') =>
      w.runtime.db.updateTable('collection_accounts').set({ owner }).where('id', '=', collection.id).execute();
    await setOwner('merchant');
    try {
      expect(about((await report(p.day)).lines, p.id)).toEqual([
        expect.objectContaining({
          kind: 'credit_without_operator_collection',
          account_id: own.accountId,
          currency: 'NGN',
          ledger_amount_minor: 330000n,
        }),
      ]);
    } finally {
      await setOwner('operator');
    }
  });

  it('a settlement with no transaction on chain', async () => {
    const p = await paidOnPaystack(w.merchant.apiKey, { amount: 2800, payout_address: payoutAddresses(1)[0] });
    const transfer = await w.runtime.db
      .selectFrom('transfers')
      .select(['batch_id', 'amount_minor'])
      .where('source_id', '=', p.id)
      .executeTakeFirstOrThrow();
    const batch = await w.runtime.db
      .selectFrom('settlement_batches')
      .select(['id', 'tx_hash', 'batch_key'])
      .where('id', '=', transfer.batch_id!)
      .executeTakeFirstOrThrow();
    // The batch recorded as confirmed names a transaction the chain never saw, and a batch id never paid.
    const setBatch = (txHash: string | null, batchKey: string) =>
      w.runtime.db
        .updateTable('settlement_batches')
        .set({ tx_hash: txHash, batch_key: batchKey })
        .where('id', '=', batch.id)
        .execute();
    const missing = toHex(randomBytes(32));
    await setBatch(missing, keccak256(toHex(randomBytes(32))));
    try {
      expect(about((await report(p.day)).lines, p.id)).toEqual([
        expect.objectContaining({
          kind: 'settlement_not_on_chain',
          currency: 'USDC',
          account_id: w.merchant.accountId,
          reference: `${batch.id} ${missing}`,
          ledger_amount_minor: transfer.amount_minor,
          source_amount_minor: 0n,
        }),
      ]);
    } finally {
      await setBatch(batch.tx_hash, batch.batch_key);
    }
  });

  it('a listing that cannot be read: M-Pesa keeps 48 hours, so an older day is unconfirmed, not clean', async () => {
    const old = dayOf(new Date(w.runtime.clock.now().getTime() - 3 * 86_400_000));
    // The operator had set M-Pesa collection before that day.
    const mpesa = await w.runtime.db
      .selectFrom('collection_accounts')
      .select(['id', 'created_at'])
      .where('rail', '=', 'mpesa')
      .where('account_id', 'is', null)
      .executeTakeFirstOrThrow();
    const setCreated = (at: Date) =>
      sql`update collection_accounts set created_at = ${at} where id = ${mpesa.id}`.execute(w.runtime.db);
    await setCreated(new Date(w.runtime.clock.now().getTime() - 5 * 86_400_000));
    try {
      const { lines, summary } = await report(old);
      expect(lines).toEqual([
        expect.objectContaining({
          kind: 'source_unavailable',
          rail: 'mpesa',
          collection_id: mpesa.id,
          payment_id: null,
          livemode: false,
        }),
      ]);
      expect(lines[0]!.detail).toMatch(/48 hours/);
      expect(summary.listings.find((l) => l.rail === 'mpesa')).toMatchObject({ listed: false });
    } finally {
      await setCreated(mpesa.created_at);
    }
  });
});
