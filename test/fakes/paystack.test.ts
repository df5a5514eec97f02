import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paystackFixture, shapeDifferences } from './fixtures/paystack/index.ts';
import { type FakePaystack, paystackSignature, startFakePaystack } from './paystack.ts';

/** A Nigerian business with USD enabled (Paystack's currencies by country: NGN, and USD). */
const TEST_KEY = 'sk_test_fake_paystack_one';
const OTHER_KEY = 'sk_test_fake_paystack_two';
const LIVE_KEY = 'sk_live_fake_paystack_three';
/** A Ghanaian business. */
const GHANA_KEY = 'sk_test_fake_paystack_ghana';
/** A Nigerian business that passes Paystack's fees to its customers. */
const FEES_KEY = 'sk_test_fake_paystack_fees';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A tiny webhook receiver that records every POST it gets and answers 200 (or what `status` says for the nth). */
async function startReceiver(status: (index: number) => number = () => 200) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(status(received.length - 1)).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/paystack`;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { url, received, close };
}

let paystack: FakePaystack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
  paystack = await startFakePaystack({
    integrations: [
      { secretKey: TEST_KEY, webhookUrl: receiver.url, currencies: ['NGN', 'USD'] },
      { secretKey: OTHER_KEY, currencies: ['NGN'] },
      { secretKey: LIVE_KEY, currencies: ['NGN'] },
      { secretKey: GHANA_KEY, currencies: ['GHS'] },
      { secretKey: FEES_KEY, webhookUrl: receiver.url, currencies: ['NGN'], feesOnCustomer: true },
    ],
  });
});
afterAll(async () => {
  await paystack.close();
  await receiver.close();
});

/** The fields of `data` these tests read (initialize, verify or refund answers). */
interface Data {
  [field: string]: unknown;
  id: number;
  reference: string;
  access_code: string;
  authorization_url: string;
  status: string;
  amount: number;
  metadata: unknown;
  paid_at: string | null;
  customer: { email: string };
}

async function api(path: string, init: { method?: string; key?: string | null; body?: unknown } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? TEST_KEY}`;
  const res = await fetch(`${paystack.baseUrl}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, json: (await res.json()) as { status: boolean; message: string; data: Data } };
}

let counter = 0;
function ref(): string {
  counter += 1;
  return `order-${Date.now()}-${counter}.v1=x`;
}

async function initialize(body: Record<string, unknown>, key = TEST_KEY) {
  const { status, json } = await api('/transaction/initialize', { key, body: { email: 'ada@example.com', ...body } });
  expect(status).toBe(200);
  return json.data as { authorization_url: string; access_code: string; reference: string };
}

/** Press one of the hosted page's buttons, as the browser's form POST would. */
async function press(authorizationUrl: string, button: 'pay' | 'decline' | 'cancel') {
  return fetch(`${authorizationUrl}/${button}`, { method: 'POST', redirect: 'manual' });
}

describe('fake Paystack: authentication', () => {
  it('answers 401 with the documented messages', async () => {
    const body = { email: 'ada@example.com', amount: 5000 };
    expect(await api('/transaction/initialize', { key: null, body })).toEqual({
      status: 401,
      json: { status: false, message: 'No Authorization Header was found' },
    });
    const res = await fetch(`${paystack.baseUrl}/transaction/initialize`, {
      method: 'POST',
      headers: { authorization: `Basic ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ status: false, message: 'Format is Authorization Bearer [secret key]' });
    expect(await api('/transaction/initialize', { key: 'sk_test_unknown', body })).toEqual({
      status: 401,
      json: { status: false, message: 'Invalid key' },
    });
  });
});

describe('fake Paystack: initialize', () => {
  it.each([
    [{ amount: 5000 }, 'Email is not allowed to be empty'],
    [{ email: 'not-an-email', amount: 5000 }, 'Invalid Email Address Passed'],
    [{ email: 'ada@example.com' }, 'Invalid Amount Sent'],
    [{ email: 'ada@example.com', amount: 50.5 }, 'Invalid Amount Sent'],
    [{ email: 'ada@example.com', amount: -5 }, 'Invalid Amount Sent'],
    [{ email: 'ada@example.com', amount: '12abc' }, 'Invalid Amount Sent'],
    [{ email: 'ada@example.com', amount: 0 }, 'You must specify a valid amount'],
    [{ email: 'ada@example.com', amount: 5000, currency: 'EUR' }, 'Currency not supported by merchant'],
    [{ email: 'ada@example.com', amount: 5000, currency: 'KES' }, 'Currency not supported by merchant'],
    [{ email: 'ada@example.com', amount: 5000, reference: 'has space' }, 'Invalid character in transaction reference'],
    [
      { email: 'ada@example.com', amount: 5000, reference: 'under_score' },
      'Invalid character in transaction reference',
    ],
  ])('rejects %j with 400 "%s"', async (body, message) => {
    expect(await api('/transaction/initialize', { body })).toEqual({ status: 400, json: { status: false, message } });
  });

  it('creates a transaction (amount as a numeric string) and refuses its reference again', async () => {
    const reference = ref();
    const { status, json } = await api('/transaction/initialize', {
      key: GHANA_KEY,
      body: { email: 'ada@example.com', amount: '500000', currency: 'GHS', reference },
    });
    const published = paystackFixture('transaction_initialize.200');
    expect(status).toBe(published.status);
    expect(shapeDifferences(json, published.body)).toEqual([]);
    expect(json.message).toBe(published.body.message);
    expect(json.data.reference).toBe(reference);
    expect(json.data.authorization_url).toBe(`${paystack.checkoutOrigin}/${json.data.access_code}`);
    expect(paystack.transactions.get(reference)).toMatchObject({
      amount: 500000,
      currency: 'GHS',
      status: 'abandoned',
    });

    const again = await api('/transaction/initialize', {
      key: GHANA_KEY,
      body: { email: 'b@example.com', amount: 100, reference },
    });
    expect(again).toEqual({ status: 400, json: { status: false, message: 'Duplicate Transaction Reference' } });
  });

  it("generates a reference, defaults to the integration's first currency and takes the domain from the key", async () => {
    const { reference } = await initialize({ amount: 100 }, LIVE_KEY);
    expect(reference).toMatch(/^[a-z0-9]{10}$/);
    const { json } = await api(`/transaction/verify/${reference}`, { key: LIVE_KEY });
    expect(json.data).toMatchObject({ domain: 'live', currency: 'NGN', status: 'abandoned', metadata: '' });
    const ghana = await initialize({ amount: 100 }, GHANA_KEY);
    expect(paystack.transactions.get(ghana.reference)?.currency).toBe('GHS');
  });

  it("answers a currency the integration has not enabled with Paystack's published refusal", async () => {
    const published = paystackFixture('currency_not_supported.400');
    for (const [key, currency] of [
      [TEST_KEY, 'GHS'],
      [GHANA_KEY, 'NGN'],
      [OTHER_KEY, 'USD'],
    ] as const) {
      const { status, json } = await api('/transaction/initialize', {
        key,
        body: { email: 'ada@example.com', amount: 5000, currency },
      });
      expect({ status, json }).toEqual({ status: published.status, json: published.body });
    }
    // USD is enabled on this one.
    await initialize({ amount: 5000, currency: 'USD' });
  });
});

describe('fake Paystack: fees', () => {
  it("with fees passed to the customer, charges the fee on top of what was asked, as Paystack's verify sample shows", async () => {
    const published = paystackFixture('verify.success_customer_bears_fees.200');
    const sample = published.body.data;
    expect(sample.amount).toBe(sample.requested_amount + sample.fees);

    const init = await initialize({ amount: 30050, currency: 'NGN' }, FEES_KEY);
    const before = await api(`/transaction/verify/${init.reference}`, { key: FEES_KEY });
    expect(before.json.data).toMatchObject({ amount: 30050, requested_amount: 30050, fees: null });
    const hits = receiver.received.length;
    await paystack.complete(init.reference, 'success');

    const { status, json } = await api(`/transaction/verify/${init.reference}`, { key: FEES_KEY });
    expect(status).toBe(published.status);
    expect(json.message).toBe(published.body.message);
    expect(shapeDifferences(json, published.body)).toEqual([]);
    const fees = Math.round(30050 * 0.015);
    expect(json.data).toMatchObject({ status: 'success', requested_amount: 30050, fees, amount: 30050 + fees });
    // charge.success carries the transaction as charged.
    const event = JSON.parse(receiver.received[hits]!.body);
    expect(event.data).toMatchObject({ reference: init.reference, amount: 30050 + fees, requested_amount: 30050 });
  });

  it('with fees borne by the merchant, the payer is charged what was asked and the fee comes out of it', async () => {
    const init = await initialize({ amount: 30050, currency: 'NGN' });
    await paystack.complete(init.reference, 'success');
    const { json } = await api(`/transaction/verify/${init.reference}`);
    expect(json.data).toMatchObject({ amount: 30050, requested_amount: 30050, fees: Math.round(30050 * 0.015) });
  });
});

describe('fake Paystack: verify', () => {
  it('reports a fresh transaction as abandoned, and hides it from other integrations', async () => {
    const { reference } = await initialize({ amount: 2500, metadata: JSON.stringify({ order: 7 }) });
    const { status, json } = await api(`/transaction/verify/${encodeURIComponent(reference)}`);
    expect(status).toBe(200);
    expect(json.message).toBe('Verification successful');
    expect(json.data).toMatchObject({ reference, status: 'abandoned', paid_at: null, amount: 2500, domain: 'test' });
    expect(json.data.metadata).toEqual({ order: 7 });
    expect(json.data.customer.email).toBe('ada@example.com');

    const live = paystackFixture('verify.not_found.400_live');
    const notFound = { status: live.status, json: live.body };
    expect(await api(`/transaction/verify/${encodeURIComponent(reference)}`, { key: OTHER_KEY })).toEqual(notFound);
    expect(await api('/transaction/verify/nope')).toEqual(notFound);
  });
});

describe('fake Paystack: hosted page', () => {
  it('pays: charge.success is signed, delivered, and verify reads success', async () => {
    const deliveredBefore = receiver.received.length;
    const callback = 'https://shop.example/return?order=42';
    const metadata = { order_id: '42', cancel_action: 'https://shop.example/cart' };
    const init = await initialize({
      amount: 750000,
      currency: 'NGN',
      reference: ref(),
      callback_url: callback,
      metadata,
    });

    const page = await fetch(init.authorization_url);
    const text = await page.text();
    expect(page.status).toBe(200);
    expect(text).toContain('NGN 7,500.00');
    expect(text).toContain('ada@example.com');
    for (const label of ['Pay', 'Decline', 'Cancel']) expect(text).toContain(`>${label}</button>`);

    const res = await press(init.authorization_url, 'pay');
    expect(res.status).toBe(302);
    const ref_ = encodeURIComponent(init.reference);
    expect(res.headers.get('location')).toBe(`${callback}&trxref=${ref_}&reference=${ref_}`);

    expect(receiver.received.length).toBe(deliveredBefore + 1);
    const hit = receiver.received.at(-1)!;
    const expected = createHmac('sha512', TEST_KEY).update(hit.body).digest('hex');
    expect(hit.headers['x-paystack-signature']).toBe(expected);
    expect(hit.headers['content-type']).toBe('application/json');
    const event = JSON.parse(hit.body);
    expect(event.event).toBe('charge.success');
    expect(event.data).toMatchObject({
      reference: init.reference,
      status: 'success',
      amount: 750000,
      currency: 'NGN',
      domain: 'test',
      gateway_response: 'Successful',
      channel: 'card',
      metadata,
      customer: { email: 'ada@example.com' },
    });
    expect(paystack.deliveries.at(-1)).toEqual({
      event: 'charge.success',
      url: receiver.url,
      body: hit.body,
      signature: expected,
      attempt: 1,
      status: 200,
    });
    expect(paystack.signedEvent(init.reference)).toEqual({ body: hit.body, signature: expected });

    const { json } = await api(`/transaction/verify/${encodeURIComponent(init.reference)}`);
    expect(json.data).toMatchObject({ status: 'success', gateway_response: 'Successful', channel: 'card' });
    expect(json.data.paid_at).toEqual(expect.any(String));
    expect(json.data.id).toBe(event.data.id);

    // Paying again changes nothing and sends nothing.
    const twice = await press(init.authorization_url, 'pay');
    expect(twice.status).toBe(409);
    expect(await twice.text()).toContain('already been completed');
    expect(receiver.received.length).toBe(deliveredBefore + 1);
    await expect(paystack.complete(init.reference, 'failed')).rejects.toThrow(/already success/);
  });

  it('declines: failed, no event, payer back to the callback', async () => {
    const deliveredBefore = paystack.deliveries.length;
    const init = await initialize({ amount: 1000, callback_url: 'https://shop.example/return' });
    const res = await press(init.authorization_url, 'decline');
    expect(res.headers.get('location')).toBe(
      `https://shop.example/return?trxref=${init.reference}&reference=${init.reference}`,
    );
    const { json } = await api(`/transaction/verify/${init.reference}`);
    expect(json.data).toMatchObject({ status: 'failed', gateway_response: 'Declined', paid_at: null });
    expect(paystack.deliveries.length).toBe(deliveredBefore);
  });

  it('cancels: the payer goes to metadata.cancel_action and the transaction stays abandoned', async () => {
    const init = await initialize({
      amount: 1000,
      callback_url: 'https://shop.example/return',
      metadata: JSON.stringify({ cancel_action: 'https://shop.example/cart?from=paystack' }),
    });
    const res = await press(init.authorization_url, 'cancel');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://shop.example/cart?from=paystack');
    expect(paystack.transactions.get(init.reference)?.status).toBe('abandoned');
    // Still open: the payer may come back and pay.
    expect(await paystack.complete(init.reference, 'success')).toContain(`reference=${init.reference}`);

    const plain = await initialize({ amount: 1000, callback_url: 'https://shop.example/return' });
    expect(await paystack.complete(plain.reference, 'abandon')).toBe(
      `https://shop.example/return?trxref=${plain.reference}&reference=${plain.reference}`,
    );
  });

  it('records an unreachable receiver as an error and still sends the payer on', async () => {
    const down = await startReceiver();
    await down.close();
    paystack.setWebhookUrl(OTHER_KEY, down.url);
    const init = await initialize({ amount: 1000 }, OTHER_KEY);
    expect(await paystack.complete(init.reference, 'success')).toBe(init.authorization_url);
    const delivery = paystack.deliveries.at(-1)!;
    expect(delivery).toMatchObject({ url: down.url, status: 'error' });
    expect(delivery.signature).toBe(paystackSignature(OTHER_KEY, delivery.body));
  });

  it('answers 404 for an unknown page', async () => {
    expect((await fetch(`${paystack.checkoutOrigin}/doesnotexist`)).status).toBe(404);
  });
});

describe('fake Paystack: refund', () => {
  it('refunds part, then the rest, then refuses', async () => {
    const unpaid = await initialize({ amount: 10000 });
    const early = await api('/refund', { body: { transaction: unpaid.reference } });
    expect(early.status).toBe(400);
    expect(early.json.status).toBe(false);

    const init = await initialize({ amount: 10000, currency: 'USD' });
    await paystack.complete(init.reference, 'success');
    expect((await api('/refund', { key: OTHER_KEY, body: { transaction: init.reference } })).status).toBe(404);
    expect((await api('/refund', { body: { transaction: init.reference, amount: 50 } })).json.message).toBe(
      'Cannot refund less than USD 1',
    );

    const part = await api('/refund', { body: { transaction: init.reference, amount: '4000' } });
    expect(part.status).toBe(200);
    expect(part.json).toMatchObject({ status: true, message: 'Refund has been queued for processing' });
    expect(part.json.data).toMatchObject({ amount: 4000, currency: 'USD', transaction: { reference: init.reference } });
    expect(paystack.transactions.get(init.reference)?.status).toBe('success');

    const tooMuch = await api('/refund', { body: { transaction: init.reference, amount: 6001 } });
    expect(tooMuch.status).toBe(400);

    const id = paystack.transactions.get(init.reference)!.id;
    const rest = await api('/refund', { body: { transaction: id } });
    expect(rest.json.data.amount).toBe(6000);
    expect((await api(`/transaction/verify/${init.reference}`)).json.data.status).toBe('reversed');
    expect(paystack.refunds.filter((r) => r.transaction === init.reference).map((r) => r.amount)).toEqual([4000, 6000]);

    expect(await api('/refund', { body: { transaction: init.reference } })).toEqual({
      status: 400,
      json: { status: false, message: 'Transaction has been fully reversed' },
    });
  });
});

/** A paid transaction of TEST_KEY, and a refund of it as plainpay sends one. */
async function paidAndRefunded(amount = 10000, refund: Record<string, unknown> = {}) {
  const init = await initialize({ amount });
  await paystack.complete(init.reference, 'success');
  const res = await api('/refund', { body: { transaction: init.reference, merchant_note: 'rf_1', ...refund } });
  expect(res.status).toBe(200);
  return { reference: init.reference, refundId: res.json.data.id };
}

/** The events the receiver got for one transaction's refunds, oldest first. */
function refundEventsOf(reference: string) {
  return receiver.received
    .map((r) => JSON.parse(r.body) as { event: string; data: Record<string, unknown> })
    .filter((e) => e.event.startsWith('refund.') && e.data.transaction_reference === reference);
}

describe('fake Paystack: a refund waits for its processor', () => {
  it('is queued pending, in the published shape, with a refund.pending event as published', async () => {
    const { reference, refundId } = await paidAndRefunded();
    const created = paystack.refunds.find((r) => r.id === refundId)!;
    expect(created).toMatchObject({ status: 'pending', merchant_note: 'rf_1', transaction: reference });
    const fetched = await api(`/refund/${refundId}`);
    const published = paystackFixture('refund_fetch.200');
    expect(fetched.status).toBe(published.status);
    expect(fetched.json.message).toBe(published.body.message);
    expect(shapeDifferences(fetched.json, published.body)).toEqual([]);
    expect(fetched.json.data).toMatchObject({ id: refundId, status: 'pending', merchant_note: 'rf_1' });

    const [event] = refundEventsOf(reference);
    expect(shapeDifferences(event, paystackFixture('webhook.refund_pending').body)).toEqual([]);
    expect(event!.data).toMatchObject({ status: 'pending', refund_reference: null, amount: '10000' });
  });

  it('answers Create Refund in the published shape', async () => {
    const init = await initialize({ amount: 10000 });
    await paystack.complete(init.reference, 'success');
    const res = await api('/refund', { body: { transaction: init.reference } });
    const published = paystackFixture('refund_create.200');
    expect(res.status).toBe(published.status);
    expect(res.json.message).toBe(published.body.message);
    expect(shapeDifferences(res.json, published.body)).toEqual([]);
    expect(res.json.data.status).toBe('pending');
  });

  it.each([
    ['processed', 'webhook.refund_processed'],
    ['failed', 'webhook.refund_failed'],
    ['needs-attention', 'webhook.refund_needs_attention'],
  ] as const)(
    'goes pending → processing → %s under the test, each step sending its published event',
    async (status, sample) => {
      const { reference, refundId } = await paidAndRefunded();
      await paystack.setRefundStatus(refundId, status);
      const events = refundEventsOf(reference);
      expect(events.map((e) => e.event)).toEqual(['refund.pending', 'refund.processing', `refund.${status}`]);
      expect(shapeDifferences(events[1], paystackFixture('webhook.refund_processing').body)).toEqual([]);
      expect(shapeDifferences(events[2], paystackFixture(sample).body)).toEqual([]);
      expect((await api(`/refund/${refundId}`)).json.data.status).toBe(status);
      // Only a retry moves a needs-attention refund on; a processed or failed one never moves again.
      await expect(paystack.setRefundStatus(refundId, 'processed')).rejects.toThrow(/is/);
      if (status === 'failed') {
        // "Your account will be credited with refund amount": the transaction is refundable again.
        expect((await api(`/transaction/verify/${reference}`)).json.data.status).toBe('success');
        expect((await api('/refund', { body: { transaction: reference } })).status).toBe(200);
      }
      if (status === 'needs-attention') {
        expect(events[2]!.data).toMatchObject({ id: String(refundId), merchant_note: 'rf_1' });
      }
    },
  );
});

describe("fake Paystack: retry with the customer's bank account", () => {
  const details = paystackFixture('refund_retry.request').body;

  it('answers 422 with the published body unless the refund needs attention', async () => {
    const { refundId } = await paidAndRefunded();
    const published = paystackFixture('refund_retry.422');
    for (const step of ['pending', 'processing', 'processed'] as const) {
      if (step !== 'pending') await paystack.setRefundStatus(refundId, step);
      const res = await api(`/refund/retry_with_customer_details/${refundId}`, { body: details });
      expect({ status: res.status, json: res.json }).toEqual({ status: published.status, json: published.body });
    }
  });

  it('sends a needs-attention refund to the account: processing, the published answer, refund.processing', async () => {
    const { reference, refundId } = await paidAndRefunded();
    await paystack.setRefundStatus(refundId, 'needs-attention');
    for (const body of [
      {},
      { refund_account_details: { currency: 'NGN', account_number: '1234567890' } },
      { refund_account_details: { ...details.refund_account_details, currency: 'GHS' } },
    ]) {
      expect((await api(`/refund/retry_with_customer_details/${refundId}`, { body })).status).toBe(400);
    }
    const res = await api(`/refund/retry_with_customer_details/${refundId}`, { body: details });
    const published = paystackFixture('refund_retry.200');
    expect(res.status).toBe(published.status);
    expect(res.json.message).toBe(published.body.message);
    expect(shapeDifferences(res.json, published.body)).toEqual([]);
    expect(res.json.data).toMatchObject({ id: refundId, status: 'processing', reason: 'PROCESSING' });
    expect(paystack.refunds.find((r) => r.id === refundId)?.account).toEqual(details.refund_account_details);
    expect(
      refundEventsOf(reference)
        .map((e) => e.event)
        .at(-1),
    ).toBe('refund.processing');
    await paystack.setRefundStatus(refundId, 'processed');
  });
});

describe('fake Paystack: List Refunds', () => {
  it("honours only perPage, page, from and to: newest first, a page at a time, with Paystack's meta", async () => {
    // A fake of its own, so that its clock and its refunds are this test's alone.
    let at = Date.parse('2026-03-02T10:00:00.000Z');
    const own = await startFakePaystack({
      clock: { now: () => new Date(at) },
      integrations: [{ secretKey: TEST_KEY, currencies: ['NGN'] }],
    });
    try {
      const call = async (query: string) => {
        const res = await fetch(`${own.baseUrl}/refund?${query}`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
        return (await res.json()) as {
          data: Array<{ id: number; merchant_note: string; transaction: number }>;
          meta: unknown;
        };
      };
      const notes: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        const init = (await (
          await fetch(`${own.baseUrl}/transaction/initialize`, {
            method: 'POST',
            headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ email: 'ada@example.com', amount: 1000 }),
          })
        ).json()) as { data: { reference: string } };
        await own.complete(init.data.reference, 'success');
        await fetch(`${own.baseUrl}/refund`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ transaction: init.data.reference, merchant_note: `rf_${i}` }),
        });
        notes.push(`rf_${i}`);
        at += 60_000;
      }
      const published = paystackFixture('refund_list.200');
      const first = await call('perPage=3');
      expect(shapeDifferences(first, published.body)).toEqual([]);
      expect(first.data.map((r) => r.merchant_note)).toEqual(['rf_6', 'rf_5', 'rf_4']);
      expect(first.meta).toEqual({ total: 7, skipped: 0, perPage: 3, page: 1, pageCount: 3 });
      expect((await call('perPage=3&page=3')).data.map((r) => r.merchant_note)).toEqual(['rf_0']);
      // The default page size is 50 (OAS).
      expect((await call('')).meta).toEqual({ total: 7, skipped: 0, perPage: 50, page: 1, pageCount: 1 });
      // An undocumented filter is ignored: every refund comes back, not the transaction's one.
      const transaction = first.data[0]!.transaction;
      expect((await call(`transaction=${transaction}&perPage=3`)).data).toEqual(first.data);
      // from and to bound the creation time.
      const from = new Date(Date.parse('2026-03-02T10:02:00.000Z')).toISOString();
      const to = new Date(Date.parse('2026-03-02T10:04:00.000Z')).toISOString();
      const window = await call(`from=${from}&to=${to}`);
      expect(window.data.map((r) => r.merchant_note)).toEqual(['rf_4', 'rf_3', 'rf_2']);
    } finally {
      await own.close();
    }
  });
});

describe("fake Paystack: webhook retries on Paystack's schedule", () => {
  /** A fake whose clock the test moves, paying one transaction to a receiver that answers 500 `failures` times. */
  async function undeliverable(key: string, failures: number) {
    let at = Date.parse('2026-03-02T10:00:00.000Z');
    const hooks = await startReceiver((index) => (index < failures ? 500 : 200));
    const own = await startFakePaystack({
      clock: { now: () => new Date(at) },
      integrations: [{ secretKey: key, currencies: ['NGN'], webhookUrl: hooks.url }],
    });
    const init = (await (
      await fetch(`${own.baseUrl}/transaction/initialize`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com', amount: 1000 }),
      })
    ).json()) as { data: { reference: string } };
    await own.complete(init.data.reference, 'success');
    /** Moves the clock to `minutes` after the first send and delivers what is due; returns the tries so far. */
    const minutesLater = async (minutes: number) => {
      at = Date.parse('2026-03-02T10:00:00.000Z') + minutes * 60_000;
      await own.deliverDueWebhooks();
      return own.deliveries.length;
    };
    const close = async () => {
      await own.close();
      await hooks.close();
    };
    return { own, hooks, minutesLater, close };
  }

  it('test mode: hourly for 10 hours after the first send, then never again', async () => {
    const { own, hooks, minutesLater, close } = await undeliverable('sk_test_fake_paystack_retry', 1000);
    try {
      expect(own.deliveries.map((d) => d.status)).toEqual([500]);
      expect(await minutesLater(59)).toBe(1);
      expect(await minutesLater(60)).toBe(2);
      expect(await minutesLater(5 * 60 + 30)).toBe(6);
      expect(await minutesLater(10 * 60)).toBe(11);
      expect(await minutesLater(100 * 60)).toBe(11);
      expect(own.deliveries.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      // Every try is the same signed event.
      expect(new Set(hooks.received.map((r) => r.body)).size).toBe(1);
    } finally {
      await close();
    }
  });

  it('live mode: every 3 minutes for the first 4 tries, then hourly for 72 hours', async () => {
    const { own, minutesLater, close } = await undeliverable('sk_live_fake_paystack_retry', 1000);
    try {
      expect(await minutesLater(2)).toBe(1);
      expect(await minutesLater(3)).toBe(2);
      expect(await minutesLater(9)).toBe(4);
      expect(await minutesLater(9 + 59)).toBe(4);
      expect(await minutesLater(9 + 60)).toBe(5);
      expect(await minutesLater(9 + 72 * 60)).toBe(4 + 72);
      expect(await minutesLater(9 + 100 * 60)).toBe(4 + 72);
      expect(own.deliveries.every((d) => d.status === 500)).toBe(true);
    } finally {
      await close();
    }
  });

  it('stops at the first 200', async () => {
    const { own, minutesLater, close } = await undeliverable('sk_test_fake_paystack_retry', 2);
    try {
      expect(await minutesLater(3 * 60)).toBe(3);
      expect(await minutesLater(10 * 60)).toBe(3);
      expect(own.deliveries.map((d) => d.status)).toEqual([500, 500, 200]);
    } finally {
      await close();
    }
  });
});
