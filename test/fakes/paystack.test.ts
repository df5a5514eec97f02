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

/** A tiny webhook receiver that records every POST it gets and answers 200. */
async function startReceiver() {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
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

    const notFound = { status: 404, json: { status: false, message: 'Transaction reference not found' } };
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
    expect(paystack.deliveries.at(-1)).toEqual({ url: receiver.url, body: hit.body, signature: expected, status: 200 });
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
