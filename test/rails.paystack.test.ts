import { beforeAll, describe, expect, it } from 'vitest';
import { getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import type { EventType } from '../src/webhooks/event-types.ts';
import { bearer, testAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import { operatorCollects, PAYSTACK_TEST_KEY, type RailsWorld, railsWorld } from './support/rails.ts';

/**
 * Paystack as it really behaves (issue 31), end to end against the fake, which does what Paystack
 * publishes (test/fakes/paystack.ts): fees passed to the customer, currencies enabled per
 * integration, refunds that page, wait and need attention, and a provider that fails mid-call.
 */

/** A Nigerian integration that passes Paystack's fees to its customers. */
const FEES_KEY = 'sk_test_5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f';

let w: RailsWorld;

beforeAll(async () => {
  w = await railsWorld({
    paystackIntegrations: [{ secretKey: FEES_KEY, currencies: ['NGN'], feesOnCustomer: true }],
  });
  await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
}, 60_000);

const form = (id: string, fields: Record<string, string>, path = '') =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}${path}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: new URLSearchParams(fields).toString(),
  });

const payment = async (key: string, id: string) =>
  (await w.api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(key) })).json();

const attemptsOf = (paymentId: string) =>
  w.runtime.db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .execute();

const eventsOf = (paymentId: string, type: EventType) =>
  w.runtime.db.selectFrom('events').select('id').where('object_id', '=', paymentId).where('type', '=', type).execute();

/** Starts a Paystack attempt as the payer's form does; returns the Paystack reference. */
async function startPaystack(id: string): Promise<string> {
  const res = await form(id, { rail: 'paystack', email: 'ada@example.com' });
  expect(res.statusCode, res.body).toBe(303);
  const [attempt] = (await attemptsOf(id)).filter((a) => a.outcome === 'pending');
  return attempt!.provider_reference!;
}

async function dashboardCookie(apiKey: string): Promise<string> {
  const signIn = await w.api.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: new URLSearchParams({ api_key: apiKey }).toString(),
  });
  return /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))![0];
}

const settleIntoBalance = () => settlePaidPayments(w.runtime, { chunk: 50, testModeOnChain: async () => false });

describe('fees passed to the customer', () => {
  it('a fee-inclusive payment is paid and settles at the asked amount, the fee booked apart', async () => {
    const shop = await testAccount(w.runtime, { name: 'Fee Shop' });
    await operatorCollects(w.runtime, 'paystack', { secret_key: FEES_KEY }, { accountId: shop.accountId });
    const p = await createPayment(w.api, shop.apiKey, { amount: 300.5, currency: 'NGN' });
    const clearing = ledgerAccount.railClearing(false, 'NGN');
    const clearingBefore = await getLedgerBalance(w.runtime.db, clearing);

    const reference = await startPaystack(p.id);
    await w.paystack.complete(reference, 'success');
    const tx = w.paystack.transactions.get(reference)!;
    // Paystack charged the payer more than was asked: the fee, on top.
    expect(tx.requested_amount).toBe(30050);
    expect(tx.amount).toBe(30050 + tx.fees!);

    expect((await payment(shop.apiKey, p.id)).status).toBe('paid');
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'succeeded', payer_fee_minor: BigInt(tx.fees!), refund_status: null });
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);

    await settleIntoBalance();
    const settled = await payment(shop.apiKey, p.id);
    expect(settled).toMatchObject({ status: 'settled', amount: 300.5 });
    // The ledger took in what was asked, not a unit of the fee (Paystack kept it).
    expect((await getLedgerBalance(w.runtime.db, clearing)) - clearingBefore).toBe(30050n);

    // Finance sees the payer's fee on the attempt.
    const cookie = await dashboardCookie(shop.apiKey);
    const page = await w.api.inject({ method: 'GET', url: `/dashboard/payments/${p.id}`, headers: { cookie } });
    expect(page.body).toMatch(new RegExp(`data-payer-fee>₦${(tx.fees! / 100).toFixed(2)}<`));
  });
});
