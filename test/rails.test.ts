import { beforeAll, describe, expect, it } from 'vitest';
import { paystackRail } from '../src/payments/rails/paystack.ts';
import { reconcileRailAttempts } from '../src/payments/rails/reconcile.ts';
import { processRailRefunds } from '../src/payments/rails/refunds.ts';
import type { EventType } from '../src/webhooks/event-types.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { sha256Hex } from '../src/core/sha256.ts';
import { paystackSignature } from './fakes/paystack.ts';
import { bearer, testAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import {
  MPESA_APP,
  operatorCollects,
  PAYSTACK_LIVE_KEY,
  PAYSTACK_TEST_KEY,
  type RailsWorld,
  railsWorld,
} from './support/rails.ts';
import { eventually } from './support/webhooks.ts';

/**
 * The live rails end to end against faithful fakes of Paystack and Daraja (test/fakes/): the payer's
 * form posts on the checkout host, the providers' real HTTP calls and callbacks, and the rule that
 * only a provider-confirmed outcome moves money (docs/rails.md). The browser walks the same paths in
 * test/browser/checkout-rails.test.ts.
 */
let w: RailsWorld;

beforeAll(async () => {
  w = await railsWorld();
  await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
  await operatorCollects(w.runtime, 'mpesa', MPESA_APP);
}, 60_000);

const form = (id: string, fields: Record<string, string>, path = '') =>
  w.checkout.inject({
    method: 'POST',
    url: `/pay/${id}${path}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
    payload: new URLSearchParams(fields).toString(),
  });

const payment = async (id: string) =>
  (await w.api.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(w.merchant.apiKey) })).json();

const attemptsOf = (paymentId: string) =>
  w.runtime.db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .execute();

const railEventsOf = (paymentId: string) =>
  w.runtime.db
    .selectFrom('rail_events')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .execute();

const eventsOf = (paymentId: string, type: EventType) =>
  w.runtime.db.selectFrom('events').select('id').where('object_id', '=', paymentId).where('type', '=', type).execute();

/** Starts a Paystack attempt as the payer's form does; returns the Paystack reference. */
async function startPaystack(id: string, email = 'ada@example.com'): Promise<string> {
  const res = await form(id, { rail: 'paystack', email });
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toMatch(new RegExp(`^${w.paystack.checkoutOrigin}/`));
  const [attempt] = (await attemptsOf(id)).filter((a) => a.outcome === 'pending');
  return attempt!.provider_reference!;
}

/** The payer pays on Paystack's page, and Paystack's charge.success never reaches plainpay. */
async function payWithEventLost(reference: string): Promise<void> {
  w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, 'http://127.0.0.1:9/nowhere');
  try {
    await w.paystack.complete(reference, 'success');
  } finally {
    w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${w.apiUrl}/hooks/paystack`);
  }
}

/** Where Paystack sends the payer back, followed on the checkout host. */
async function payerReturns(url: string) {
  const res = await w.checkout.inject({ method: 'GET', url: url.replace(w.checkoutUrl, '') });
  expect(res.statusCode).toBe(303);
  return w.checkout.inject({ method: 'GET', url: String(res.headers.location) });
}

describe('which rails a checkout offers', () => {
  it('a live checkout offers nothing until the operator collects in live mode, then offers it', async () => {
    const live = await testAccount(w.runtime, { livemode: true, name: 'Live Shop' });
    const p = await createPayment(w.api, live.apiKey, { amount: 2500, currency: 'NGN' });
    const before = await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` });
    expect(before.body).toContain('Live payments cannot be made on this checkout yet');
    expect(before.body).not.toContain('name="rail"');

    await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_LIVE_KEY }, { livemode: true });
    const after = await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` });
    expect(after.body).toContain('Pay ₦2,500.00 with Paystack');
    // The sandbox's buttons never appear on a live page.
    expect(after.body).not.toContain('Simulate a declined payment');
    expect(after.body).not.toContain('with M-Pesa');
    const rails = await w.api.inject({ method: 'GET', url: '/v1/payment_rails', headers: bearer(live.apiKey) });
    expect(rails.json()).toEqual({
      object: 'list',
      data: [
        {
          id: 'paystack',
          object: 'payment_rail',
          rail: 'paystack',
          livemode: true,
          currencies: ['NGN', 'GHS', 'KES', 'ZAR'],
          collected_by: 'operator',
        },
      ],
      has_more: false,
    });
  });
});

describe('Paystack', () => {
  it('pays only on the signed charge.success that verify confirms; the same event again pays once', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, {
      amount: 7500,
      currency: 'NGN',
      webhook_url: 'https://merchant.example/hooks',
    });
    const reference = await startPaystack(p.id);
    expect((await payment(p.id)).status).toBe('processing');
    const tx = w.paystack.transactions.get(reference)!;
    expect(tx).toMatchObject({ amount: 750000, currency: 'NGN', email: 'ada@example.com' });

    const back = await w.paystack.complete(reference, 'success');
    expect((await payment(p.id)).status).toBe('paid');
    const page = await payerReturns(back);
    expect(page.body).toContain('Payment received');

    const { body, signature } = w.paystack.signedEvent(reference);
    const replay = await w.api.inject({
      method: 'POST',
      url: '/hooks/paystack',
      headers: { 'content-type': 'application/json', 'x-paystack-signature': signature },
      payload: body,
    });
    expect(replay.statusCode).toBe(200);
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({
      outcome: 'succeeded',
      provider_receipt: String(tx.id),
      payer_hint: 'a***@example.com',
    });
    const verdicts = (await railEventsOf(p.id)).map((e) => `${e.kind}:${e.verdict}`);
    expect(verdicts).toEqual(
      expect.arrayContaining(['start:accepted', 'callback:received', 'verification:succeeded', 'callback:duplicate']),
    );

    // Finance sees the attempt and every provider message on the payment's page.
    const signIn = await w.api.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: w.merchant.apiKey }).toString(),
    });
    const cookie = /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))![0];
    const dashboard = await w.api.inject({ method: 'GET', url: `/dashboard/payments/${p.id}`, headers: { cookie } });
    expect(dashboard.statusCode).toBe(200);
    expect(dashboard.body).toContain(`data-attempt-id="${attempt!.id}"`);
    expect(dashboard.body).toContain(reference);
    for (const verdict of ['accepted', 'received', 'succeeded', 'duplicate']) {
      expect(dashboard.body).toContain(`data-rail-event="${verdict}"`);
    }
  });

  it('a declined card and an abandoned page leave the payment payable, with no money moved', async () => {
    const declined = await createPayment(w.api, w.merchant.apiKey, { amount: 1200, currency: 'GHS' });
    const page = await payerReturns(await w.paystack.complete(await startPaystack(declined.id), 'failed'));
    expect(page.body).toContain('The payment was declined. No money was taken.');
    expect((await payment(declined.id)).status).toBe('pending');
    expect((await attemptsOf(declined.id))[0]!.outcome).toBe('declined');

    const abandoned = await createPayment(w.api, w.merchant.apiKey, { amount: 1200, currency: 'GHS' });
    const left = await payerReturns(await w.paystack.complete(await startPaystack(abandoned.id), 'abandon'));
    expect(left.body).toContain('The payment was not completed. No money was taken.');
    expect((await payment(abandoned.id)).status).toBe('pending');
    // Payable again, on any rail.
    expect(left.body).toContain('Pay GH₵1,200.00 with Paystack');
    expect(await eventsOf(abandoned.id, 'payment.paid')).toHaveLength(0);
  });

  it('refuses an event with a wrong signature, and flags a signed event whose amount or currency differs', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 3000, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    const event = JSON.stringify({
      event: 'charge.success',
      data: { reference, amount: 300000, currency: 'NGN', status: 'success' },
    });
    const forged = await w.api.inject({
      method: 'POST',
      url: '/hooks/paystack',
      headers: {
        'content-type': 'application/json',
        'x-paystack-signature': paystackSignature('sk_test_someoneelse1234567', event),
      },
      payload: event,
    });
    expect(forged.statusCode).toBe(401);
    expect((await payment(p.id)).status).toBe('processing');
    expect((await railEventsOf(p.id)).some((e) => e.verdict === 'refused_signature')).toBe(true);

    // Paystack really took 3,000.00, but an event (signed with the key) says 30.00: the figures disagree.
    await w.paystack.complete(reference, 'success').catch(() => undefined);
    const p2 = await createPayment(w.api, w.merchant.apiKey, { amount: 3000, currency: 'NGN' });
    const reference2 = await startPaystack(p2.id);
    await payWithEventLost(reference2);
    const tampered = JSON.parse(w.paystack.signedEvent(reference2).body);
    tampered.data.amount = 3000;
    tampered.data.currency = 'GHS';
    const body = JSON.stringify(tampered);
    const res = await w.api.inject({
      method: 'POST',
      url: '/hooks/paystack',
      headers: {
        'content-type': 'application/json',
        'x-paystack-signature': paystackSignature(PAYSTACK_TEST_KEY, body),
      },
      payload: body,
    });
    expect(res.statusCode).toBe(200);
    expect((await payment(p2.id)).status).toBe('pending');
    const [attempt] = await attemptsOf(p2.id);
    expect(attempt!.outcome).toBe('flagged');
    expect(attempt!.failure_reason).toMatch(/amount 3000 \(asked 300000\).*currency GHS/);
    expect(await eventsOf(p2.id, 'payment.paid')).toHaveLength(0);
    // Paystack did take the money: it goes back to the payer, found by its transaction.
    expect(attempt!.refund_status).toBe('due');
    expect(attempt!.provider_receipt).toBe(String(w.paystack.transactions.get(reference2)!.id));
    await reconcileRailAttempts(w.runtime);
    expect((await attemptsOf(p2.id))[0]!.refund_status).toBe('refunded');
  });

  it('a signed event verify does not confirm yet is kept, and paid once verify agrees', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 6100, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    // The event as Paystack signs it, arriving before verify reports the charge (Paystack's side lags).
    const early = w.paystack.signedEvent(reference);
    const res = await w.api.inject({
      method: 'POST',
      url: '/hooks/paystack',
      headers: { 'content-type': 'application/json', 'x-paystack-signature': early.signature },
      payload: early.body,
    });
    expect(res.statusCode).toBe(200);
    expect((await payment(p.id)).status).toBe('processing');

    // Paystack completes the charge; its retry of the event is lost, the reconciler's verify now agrees.
    await payWithEventLost(reference);
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(p.id)).status).toBe('paid');
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
  });

  it('a success verify reports without any signed event is never paid by the reconciler', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 6200, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    await payWithEventLost(reference);
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(p.id)).status).toBe('processing');
    expect((await railEventsOf(p.id)).some((e) => e.verdict === 'awaiting_succeeded')).toBe(true);
  });

  it('asks for a valid email before calling Paystack', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 100, currency: 'NGN' });
    const res = await form(p.id, { rail: 'paystack', email: 'not-an-email' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('Enter a valid email address');
    expect(res.body).toContain('aria-invalid="true"');
    expect(await attemptsOf(p.id)).toHaveLength(0);
    expect((await payment(p.id)).status).toBe('pending');
  });

  it('a success after the attempt was given up is recorded as late and refunded through Paystack', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, {
      amount: 4200,
      currency: 'NGN',
      webhook_url: 'https://merchant.example/hooks',
    });
    const reference = await startPaystack(p.id);
    await payerReturns(await w.paystack.complete(reference, 'abandon'));
    expect((await payment(p.id)).status).toBe('pending');
    // The payer goes back to Paystack's still-open page and pays after all.
    await w.paystack.complete(reference, 'success');
    expect((await payment(p.id)).status).toBe('pending');
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'succeeded', late: true, refund_status: 'due' });
    expect(await eventsOf(p.id, 'payment.late_success')).toHaveLength(1);

    await reconcileRailAttempts(w.runtime);
    expect(
      w.paystack.refunds.filter(
        (r) =>
          r.transaction === reference || String(r.transaction) === String(w.paystack.transactions.get(reference)!.id),
      ),
    ).toHaveLength(1);
    expect((await attemptsOf(p.id))[0]!.refund_status).toBe('refunded');
    await reconcileRailAttempts(w.runtime);
    expect(
      w.paystack.refunds.filter(
        (r) =>
          String(r.transaction) === String(w.paystack.transactions.get(reference)!.id) || r.transaction === reference,
      ),
    ).toHaveLength(1);
  });
});

describe('M-Pesa STK Push', () => {
  const phone = '254712345678';

  async function startMpesa(id: string) {
    const res = await form(id, { rail: 'mpesa', phone: '0712 345 678' });
    expect(res.statusCode).toBe(303);
    const page = await w.checkout.inject({ method: 'GET', url: String(res.headers.location) });
    expect(page.body).toContain('Check your phone');
    expect(page.body).toContain('2547******78');
    return w.daraja.waitForPush(phone);
  }

  it('pays when the phone accepts and the STK query confirms the callback', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 1000, currency: 'KES', reference: 'order-77' });
    const push = await startMpesa(p.id);
    expect(push).toMatchObject({ amount: 1000, phone, accountReference: 'order-77' });
    expect((await payment(p.id)).status).toBe('processing');
    await w.daraja.phone.accept(push.checkoutRequestId);
    expect((await payment(p.id)).status).toBe('paid');
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'succeeded', provider_reference: push.checkoutRequestId });
    expect(attempt!.provider_receipt).toBe(w.daraja.pushes.get(push.checkoutRequestId)!.receipt);

    // The same callback again: acknowledged, nothing more.
    const again = await w.api.inject({
      method: 'POST',
      url: new URL(push.callbackUrl).pathname,
      headers: { 'content-type': 'application/json' },
      payload: w.daraja.callbackBody(push.checkoutRequestId),
    });
    expect(again.json()).toEqual({ ResultCode: 0, ResultDesc: 'Accepted' });
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
  });

  it("gives Daraja a callback URL free of the words Safaricom refuses, and still hears a pre-upgrade push's URL", async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 1100, currency: 'KES' });
    const push = await startMpesa(p.id);
    const url = new URL(push.callbackUrl);
    expect(url.origin).toBe(w.apiUrl);
    expect(url.pathname).toMatch(/^\/hooks\/stk\/[0-9a-f]{64}$/);
    expect(push.callbackUrl).not.toMatch(/m\W*pesa|safaricom|exe|cmd|sql|query/i);
    await w.daraja.phone.accept(push.checkoutRequestId);
    expect((await payment(p.id)).status).toBe('paid');

    // A push made before the upgrade named /hooks/mpesa/<attempt>/<secret>: Daraja posts its one
    // callback there, and it is still heard (and believed only as far as the query confirms it).
    const old = await createPayment(w.api, w.merchant.apiKey, { amount: 1200, currency: 'KES' });
    const oldPush = await startMpesa(old.id);
    const [attempt] = await attemptsOf(old.id);
    const oldSecret = 'pre-upgrade-secret-0123456789abcdef';
    await w.runtime.db
      .updateTable('payment_attempts')
      .set({ callback_token_hash: sha256Hex(oldSecret) })
      .where('id', '=', attempt!.id)
      .execute();
    await w.daraja.phone.accept(oldPush.checkoutRequestId, { callback: false });
    const body = w.daraja.callbackBody(oldPush.checkoutRequestId);
    const post = (path: string) =>
      w.api.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: body });
    expect((await post(`/hooks/mpesa/${attempt!.id}/not-the-secret`)).statusCode).toBe(404);
    expect((await post(url.pathname)).statusCode).toBe(400);
    expect((await post(`/hooks/mpesa/${attempt!.id}/${oldSecret}`)).json()).toEqual({
      ResultCode: 0,
      ResultDesc: 'Accepted',
    });
    expect((await payment(old.id)).status).toBe('paid');
    expect(await eventsOf(old.id, 'payment.paid')).toHaveLength(1);
  });

  it('never sends a live push whose result would come back over plain http', async () => {
    const live = await testAccount(w.runtime, { livemode: true, name: 'Live Duka' });
    await operatorCollects(
      w.runtime,
      'mpesa',
      { ...MPESA_APP, environment: 'production' },
      { livemode: true, accountId: live.accountId },
    );
    const p = await createPayment(w.api, live.apiKey, { amount: 1300, currency: 'KES' });
    const pushesBefore = w.daraja.pushes.size;
    const res = await form(p.id, { rail: 'mpesa', phone: '0712 345 601' });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain(
      'The payment provider could not start this payment. Nothing was charged — choose another method, or try again later.',
    );
    expect(w.daraja.pushes.size).toBe(pushesBefore);
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'failed', failure_reason: expect.stringMatching(/not HTTPS/) });
    const read = await w.api.inject({ method: 'GET', url: `/v1/payments/${p.id}`, headers: bearer(live.apiKey) });
    expect(read.json().status).toBe('pending');
  });

  it('a cancel on the phone and a timeout leave the payment payable again', async () => {
    const cancelled = await createPayment(w.api, w.merchant.apiKey, { amount: 500, currency: 'KES' });
    const push = await startMpesa(cancelled.id);
    await w.daraja.phone.cancel(push.checkoutRequestId);
    expect((await payment(cancelled.id)).status).toBe('pending');
    expect((await attemptsOf(cancelled.id))[0]!.outcome).toBe('cancelled');
    const page = await w.checkout.inject({
      method: 'GET',
      url: `/pay/${cancelled.id}?attempt=${(await attemptsOf(cancelled.id))[0]!.id}`,
    });
    expect(page.body).toContain('The M-Pesa request was cancelled on your phone. No money was taken.');

    // No callback ever comes: the reconciler asks the STK query API.
    const silent = await createPayment(w.api, w.merchant.apiKey, { amount: 500, currency: 'KES' });
    const push2 = await startMpesa(silent.id);
    await w.daraja.phone.timeout(push2.checkoutRequestId, { callback: false });
    expect((await payment(silent.id)).status).toBe('processing');
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(silent.id)).status).toBe('pending');
    expect((await attemptsOf(silent.id))[0]!.outcome).toBe('timed_out');
  });

  it('a callback the STK query does not confirm, or on a URL without the secret, pays nothing', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 800, currency: 'KES' });
    const push = await startMpesa(p.id);
    // A forged success on the right URL while the phone has not answered: the query says "processing".
    const forged = JSON.stringify({
      Body: {
        stkCallback: {
          MerchantRequestID: push.merchantRequestId,
          CheckoutRequestID: push.checkoutRequestId,
          ResultCode: 0,
          ResultDesc: 'The service request is processed successfully.',
          CallbackMetadata: {
            Item: [
              { Name: 'Amount', Value: 800 },
              { Name: 'MpesaReceiptNumber', Value: 'FAKE000000' },
            ],
          },
        },
      },
    });
    const path = new URL(push.callbackUrl).pathname;
    const res = await w.api.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/json' },
      payload: forged,
    });
    expect(res.statusCode).toBe(200);
    expect((await payment(p.id)).status).toBe('processing');

    const wrongSecret = await w.api.inject({
      method: 'POST',
      url: path.replace(/[^/]+$/, 'not-the-secret'),
      headers: { 'content-type': 'application/json' },
      payload: forged,
    });
    expect(wrongSecret.statusCode).toBe(404);
    const verdicts = (await railEventsOf(p.id)).map((e) => e.verdict);
    expect(verdicts).toContain('awaiting_pending');
    // A secret that is no attempt's names no payment: its refusal is kept all the same.
    const refused = await w.runtime.db
      .selectFrom('rail_events')
      .select('id')
      .where('verdict', '=', 'refused_unknown')
      .where('payment_id', 'is', null)
      .execute();
    expect(refused.length).toBeGreaterThan(0);

    // "Pay another way" while the prompt is still on the phone: nothing ends, the page says why.
    const another = await form(p.id, {}, '/abandon');
    expect(another.headers.location).toMatch(/open=1$/);
    const waiting = await w.checkout.inject({ method: 'GET', url: String(another.headers.location) });
    expect(waiting.body).toContain('Your phone has not answered yet.');
    expect((await payment(p.id)).status).toBe('processing');

    // The payer then cancels: the query says so, and that is what counts.
    await w.daraja.phone.cancel(push.checkoutRequestId);
    expect((await payment(p.id)).status).toBe('pending');
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(0);
  });

  it('answers hostile callback bodies with an error object, never a 500, and pays nothing', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 900, currency: 'KES' });
    const push = await startMpesa(p.id);
    const path = new URL(push.callbackUrl).pathname;
    const callback = (extra: Record<string, unknown>) =>
      JSON.stringify({
        Body: { stkCallback: { CheckoutRequestID: push.checkoutRequestId, ResultCode: 0, ResultDesc: 'ok', ...extra } },
      });
    for (const payload of [
      callback({ CallbackMetadata: { Item: 'not a list' } }),
      callback({ CallbackMetadata: { Item: [null, 7, { Name: 'Amount' }] } }),
      callback({ CallbackMetadata: null }),
      callback({ CheckoutRequestID: 'x'.repeat(5000) }),
      '{"Body":',
      '[]',
      'null',
    ]) {
      const res = await w.api.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload.slice(0, 80)).toBeLessThan(500);
    }
    for (const payload of ['{"event":"charge.success","data":{"reference":[1]}}', '{"data":null}', 'nope', '{}']) {
      const res = await w.api.inject({
        method: 'POST',
        url: '/hooks/paystack',
        headers: { 'content-type': 'application/json', 'x-paystack-signature': 'zz' },
        payload,
      });
      expect(res.statusCode, payload).toBeLessThan(500);
    }
    expect((await payment(p.id)).status).toBe('processing');
    await w.daraja.phone.cancel(push.checkoutRequestId);
  });

  it('is offered only for whole shillings; Paystack still takes the cents', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 99.5, currency: 'KES' });
    const page = await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` });
    expect(page.body).not.toContain('with M-Pesa');
    expect(page.body).toContain('with Paystack');
  });
});

describe('one attempt at a time', () => {
  it('a second attempt while one is in flight is refused, so a payer is never charged twice', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 1000, currency: 'KES' });
    await startPaystack(p.id);
    const second = await form(p.id, { rail: 'mpesa', phone: '0712345679' });
    expect(second.statusCode).toBe(303);
    expect(second.headers.location).toBe(`/pay/${p.id}`);
    expect(w.daraja.pushes.size).toBeGreaterThan(0);
    expect([...w.daraja.pushes.values()].some((push) => push.phone === '254712345679')).toBe(false);
    const page = await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` });
    expect(page.body).toContain('Continue on Paystack');
    expect(page.body).toContain('Pay another way');

    // "Pay another way": Paystack says not paid, so the attempt ends and the payment is payable again.
    const another = await form(p.id, {}, '/abandon');
    expect(another.statusCode).toBe(303);
    await eventually(async () => ((await payment(p.id)).status === 'pending' ? true : undefined));
  });
});

describe('refunds go back through the rail the payer paid on', () => {
  /** The settlement worker's intake: every paid payment settles into its account's balance. */
  const settleIntoBalance = () =>
    settlePaidPayments(w.runtime, {
      chunk: 50,
      testModeOnChain: async () => false,
    });

  /** A Paystack-paid payment, settled into the merchant's balance (the settlement worker's intake). */
  async function settledPaystackPayment(amount: number): Promise<{ id: string; reference: string }> {
    const p = await createPayment(w.api, w.merchant.apiKey, {
      amount,
      currency: 'NGN',
      webhook_url: 'https://merchant.example/hooks',
    });
    const reference = await startPaystack(p.id);
    await w.paystack.complete(reference, 'success');
    await settleIntoBalance();
    expect((await payment(p.id)).status).toBe('settled');
    return { id: p.id, reference };
  }

  const refund = (id: string, body: Record<string, unknown>) =>
    w.api.inject({
      method: 'POST',
      url: `/v1/payments/${id}/refunds`,
      headers: { ...bearer(w.merchant.apiKey), 'content-type': 'application/json' },
      payload: body,
    });

  const refundRow = (id: string) =>
    w.runtime.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('a Paystack refund is pending until Paystack has paid it, and is sent exactly once', async () => {
    const { id, reference } = await settledPaystackPayment(8000);
    const res = await refund(id, { amount: 1000, reason: 'one item returned' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'pending',
      rail: 'paystack',
      amount: 1000,
      payment_status: 'partially_refunded',
    });
    const rf = res.json().id as string;

    await processRailRefunds(w.runtime);
    const sent = w.paystack.refunds.filter((r) => r.merchant_note === rf);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ amount: 100000, transaction: reference });
    // Queued at Paystack: still pending here, until Paystack reports it processed.
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_reference: String(sent[0]!.id) });
    await paystackProcesses(rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'succeeded', provider_reference: String(sent[0]!.id) });

    // A send whose answer was lost: the next pass finds it by its note and never sends it again.
    const second = (await refund(id, { amount: 500 })).json().id as string;
    await processRailRefunds(w.runtime);
    await w.runtime.db
      .updateTable('refunds')
      .set({ provider_reference: null, checked_at: null })
      .where('id', '=', second)
      .execute();
    await paystackProcesses(second);
    expect(w.paystack.refunds.filter((r) => r.merchant_note === second)).toHaveLength(1);
    expect((await refundRow(second)).status).toBe('succeeded');
  });

  /** Paystack's processor pays the refund plainpay sent; plainpay's next pass reads it processed. */
  async function paystackProcesses(rf: string) {
    const [sent] = w.paystack.refunds.filter((r) => r.merchant_note === rf);
    await w.paystack.setRefundStatus(sent!.id, 'processed');
    await w.runtime.db.updateTable('refunds').set({ checked_at: null }).where('id', '=', rf).execute();
    await processRailRefunds(w.runtime);
  }

  it('a refund Paystack fails is undone: the balance, the payment and refund.failed say so', async () => {
    const { id } = await settledPaystackPayment(5000);
    const balanceOf = async () =>
      (await w.api.inject({ method: 'GET', url: '/v1/balance', headers: bearer(w.merchant.apiKey) })).body;
    const before = await balanceOf();
    const res = await refund(id, {});
    expect(res.json()).toMatchObject({ status: 'pending', payment_status: 'refunded' });
    const rf = res.json().id as string;
    // Paystack accepts it, then the payer's bank sends it back before Paystack reports it processed.
    const after = await sendThenBankSays(rf, 'failed');
    expect(after).toMatchObject({ status: 'failed', failure_reason: expect.stringMatching(/failed/) });
    expect((await payment(id)).status).toBe('settled');
    expect((await payment(id)).amount_refunded).toBe(0);
    expect(await balanceOf()).toBe(before);
    expect(await eventsOf(id, 'refund.failed')).toHaveLength(1);

    // Two parts, the first failing after the second was taken; then the rest again. What the
    // standing refunds take is exactly what the payment credited, not a unit more or less.
    const a = (await refund(id, { amount: 2000.01 })).json().id as string;
    const b = (await refund(id, {})).json().id as string;
    expect((await sendThenBankSays(a, 'failed')).status).toBe('failed');
    await processRailRefunds(w.runtime);
    await paystackProcesses(b);
    expect((await refundRow(b)).status).toBe('succeeded');
    const again = (await refund(id, {})).json();
    expect(again.amount).toBe(2000.01);
    await processRailRefunds(w.runtime);
    await paystackProcesses(again.id);
    expect((await refundRow(again.id)).status).toBe('succeeded');
    const settled = await w.runtime.db
      .selectFrom('payments')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const standing = await w.runtime.db
      .selectFrom('refunds')
      .selectAll()
      .where('payment_id', '=', id)
      .where('status', '<>', 'failed')
      .execute();
    expect(standing.map((r) => r.id).sort()).toEqual([b, again.id].sort());
    expect(standing.reduce((sum, r) => sum + r.merchant_debit_minor, 0n)).toBe(settled.settlement_minor);
    expect(standing.reduce((sum, r) => sum + r.fee_return_minor, 0n)).toBe(settled.fee_minor);
    expect(settled.status).toBe('refunded');
  });

  /**
   * The refund sent to Paystack with its answer lost (submitted, no provider id yet), the bank's
   * later verdict set on the fake, then plainpay's next pass: it finds the refund by its note and
   * reads how it ended.
   */
  async function sendThenBankSays(rf: string, status: 'failed' | 'processed') {
    const sentId = await sendOnly(rf);
    await w.paystack.setRefundStatus(Number(sentId), status);
    await w.runtime.db.updateTable('refunds').set({ checked_at: null }).where('id', '=', rf).execute();
    await processRailRefunds(w.runtime);
    expect(w.paystack.refunds.filter((r) => r.merchant_note === rf)).toHaveLength(1);
    return refundRow(rf);
  }

  async function sendOnly(rf: string) {
    const row = await refundRow(rf);
    const attempt = (await attemptsOf(row.payment_id)).find((a) => a.outcome === 'succeeded')!;
    const id = await paystackRail.refund!({
      services: w.runtime,
      credentials: { secret_key: PAYSTACK_TEST_KEY },
      attempt,
      amountMinor: row.amount_minor,
      note: rf,
    });
    await w.runtime.db
      .updateTable('refunds')
      .set({ submitted_at: w.runtime.clock.now() })
      .where('id', '=', rf)
      .execute();
    return id;
  }

  it('an M-Pesa payment cannot be refunded by plainpay: a clear error, and nothing moves', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 300, currency: 'KES' });
    const res0 = await form(p.id, { rail: 'mpesa', phone: '0712 345 600' });
    expect(res0.statusCode).toBe(303);
    const push = await w.daraja.waitForPush('254712345600');
    await w.daraja.phone.accept(push.checkoutRequestId);
    await settleIntoBalance();
    const res = await refund(p.id, {});
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'payment_id' });
    expect(res.json().error.message).toMatch(/M-Pesa/);
    expect((await payment(p.id)).amount_refunded).toBe(0);
  });
});
