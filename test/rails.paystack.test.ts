import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.ts';
import { getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import { collectionFor } from '../src/payments/rails/collections.ts';
import { reconcileRailAttempts } from '../src/payments/rails/reconcile.ts';
import { processRailRefunds } from '../src/payments/rails/refunds.ts';
import { runSystemTool } from '../src/pipeline/system-runs.ts';
import { startPaymentAttempt } from '../tools/system/start-payment-attempt.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import type { EventType } from '../src/webhooks/event-types.ts';
import { paystackFixture } from './fakes/fixtures/paystack/index.ts';
import { paystackSignature } from './fakes/paystack.ts';
import { afterFile } from './support/after-file.ts';
import { bearer, testAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';
import { operatorCollects, PAYSTACK_TEST_KEY, type RailsWorld, railsWorld } from './support/rails.ts';

/**
 * Paystack as it really behaves (issue 31), end to end against the fake, which does what Paystack
 * publishes (test/fakes/paystack.ts): fees passed to the customer, currencies enabled per
 * integration, refunds that page, wait and need attention, and a provider that fails mid-call. A
 * proxy stands between plainpay and the fake's API, forwarding everything until a test arms a
 * fault on it.
 */

/** A Nigerian integration that passes Paystack's fees to its customers. */
const FEES_KEY = 'sk_test_5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f';
/** A Nigerian integration: NGN only, as Paystack enables currencies per business and country. */
const NIGERIA_KEY = 'sk_test_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b';
const METRICS_TOKEN = 'paystack-metrics-token-0123456789abcdef';

type Fault =
  /** Not forwarded: Paystack is down (503). */
  | 'unavailable'
  /** Forwarded, Paystack acts, and its answer is replaced by a gateway's 502. */
  | 'answer_5xx_after'
  /** Forwarded, Paystack acts, and the connection drops before its answer. */
  | 'lose_answer';
const faults: Array<{ method: string; path: RegExp; fault: Fault; times: number }> = [];
/** Arms a fault on the next `times` requests that match. */
function arm(method: string, path: RegExp, fault: Fault, times = 1): void {
  faults.push({ method, path, fault, times });
}
function disarm(): void {
  faults.length = 0;
}

async function proxyTo(fakeUrl: string): Promise<string> {
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const armed = faults.find((f) => f.times > 0 && f.method === req.method && f.path.test(req.url ?? ''));
      if (armed) armed.times -= 1;
      if (armed?.fault === 'unavailable') {
        res.writeHead(503, { 'content-type': 'text/html' }).end('<html>503 Service Unavailable</html>');
        return;
      }
      const answer = await forward(fakeUrl, req, Buffer.concat(chunks));
      if (armed?.fault === 'answer_5xx_after') {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>');
        return;
      }
      if (armed?.fault === 'lose_answer') {
        req.socket.destroy();
        return;
      }
      res.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  afterFile(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

async function forward(fakeUrl: string, req: IncomingMessage, body: Buffer) {
  const answer = await fetch(`${fakeUrl}${req.url}`, {
    method: req.method,
    headers: Object.fromEntries(
      Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length'),
    ) as Record<string, string>,
    body: req.method === 'GET' ? undefined : body,
  });
  return {
    status: answer.status,
    type: answer.headers.get('content-type') ?? 'application/json',
    body: await answer.text(),
  };
}

let w: RailsWorld;
/** What plainpay logged, at warn and above. */
const logged: Array<{ level: number; msg: string; [field: string]: unknown }> = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
      done();
    },
  });
  w = await railsWorld({
    paystackUrl: proxyTo,
    paystackIntegrations: [
      { secretKey: FEES_KEY, currencies: ['NGN'], feesOnCustomer: true },
      { secretKey: NIGERIA_KEY, currencies: ['NGN'] },
    ],
    env: { METRICS_TOKEN },
    logger: createLogger('warn', sink),
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

/** The value of a sample in GET /metrics, by its name and labels as written. */
async function metric(line: string): Promise<number> {
  const res = await w.api.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
  const found = res.body.split('\n').find((l) => l.startsWith(`${line} `));
  return Number(found?.slice(line.length + 1) ?? Number.NaN);
}

describe('currencies enabled per integration', () => {
  it('a currency the integration lacks is never offered to a payer after the first refusal', async () => {
    const shop = await testAccount(w.runtime, { name: 'Lagos Shop' });
    const collection = await operatorCollects(
      w.runtime,
      'paystack',
      { secret_key: NIGERIA_KEY },
      { accountId: shop.accountId },
    );
    const refusalsBefore = await metric('plainpay_rail_currency_refusals_total{rail="paystack"}');
    const transactionsBefore = w.paystack.transactions.size;

    // plainpay cannot know beforehand: Paystack is offered for cedis, and the payer tries it.
    const p = await createPayment(w.api, shop.apiKey, { amount: 1500, currency: 'GHS' });
    const page = await w.checkout.inject({ method: 'GET', url: `/pay/${p.id}` });
    expect(page.body).toContain('Pay GH₵1,500.00 with Paystack');
    const refused = await form(p.id, { rail: 'paystack', email: 'kofi@example.com' });
    expect(refused.statusCode).toBe(400);
    // Said plainly, with the other ways to pay still there; never "did not answer" or a provider's words.
    expect(refused.body).toContain(
      'Card, bank transfer, USSD or mobile money: not available in GHS for this checkout. No money was taken. Please pay another way.',
    );
    expect(refused.body).not.toMatch(/did not answer|refused|Currency not supported/);
    expect(refused.body).not.toContain('with Paystack');
    expect(refused.body).toContain('Simulate a declined payment');
    expect((await payment(shop.apiKey, p.id)).status).toBe('pending');
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ outcome: 'failed', failure_reason: expect.stringContaining('GHS') });
    expect(w.paystack.transactions.size).toBe(transactionsBefore);

    // The operator is told which collection account and currency, in the log and in /metrics.
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 50, collectionId: collection.id, currency: 'GHS', rail: 'paystack' }),
    );
    expect(await metric('plainpay_rail_currency_refusals_total{rail="paystack"}')).toBe(refusalsBefore + 1);

    // From now on Paystack is not offered in cedis on that collection account: not on this
    // checkout, not on the next, and not through a hand-made form post; naira still are.
    for (const id of [p.id, (await createPayment(w.api, shop.apiKey, { amount: 20, currency: 'GHS' })).id]) {
      const again = await w.checkout.inject({ method: 'GET', url: `/pay/${id}` });
      expect(again.body).not.toContain('with Paystack');
      const forced = await form(id, { rail: 'paystack', email: 'kofi@example.com' });
      expect(forced.statusCode).toBe(400);
    }
    expect(w.paystack.transactions.size).toBe(transactionsBefore);
    const naira = await createPayment(w.api, shop.apiKey, { amount: 1500, currency: 'NGN' });
    expect((await w.checkout.inject({ method: 'GET', url: `/pay/${naira.id}` })).body).toContain(
      'Pay ₦1,500.00 with Paystack',
    );
    const rails = await w.api.inject({ method: 'GET', url: '/v1/payment_rails', headers: bearer(shop.apiKey) });
    expect(rails.json().data).toContainEqual(
      expect.objectContaining({ rail: 'paystack', currencies: ['NGN', 'KES', 'ZAR'] }),
    );
  });
});

describe('refunds', () => {
  /** A Paystack-paid payment of the default merchant, settled into its balance. */
  async function settledPayment(amount: number): Promise<{ id: string; reference: string }> {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    await w.paystack.complete(reference, 'success');
    await settleIntoBalance();
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('settled');
    return { id: p.id, reference };
  }

  const refund = async (id: string, body: Record<string, unknown>): Promise<string> => {
    const res = await w.api.inject({
      method: 'POST',
      url: `/v1/payments/${id}/refunds`,
      headers: { ...bearer(w.merchant.apiKey), 'content-type': 'application/json' },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().id as string;
  };

  const refundRow = (id: string) =>
    w.runtime.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  /** The worker's next pass over this refund (its lease lapsed). */
  async function nextPass(rf: string): Promise<void> {
    await w.runtime.db.updateTable('refunds').set({ checked_at: null }).where('id', '=', rf).execute();
    await processRailRefunds(w.runtime);
  }

  /** Where the other systems on the integration take their events: a receiver that answers 200. */
  async function otherSystemsHooks(): Promise<string> {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    afterFile(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  /** Refunds other systems sharing the operator's integration make, straight at Paystack. */
  async function otherSystemsRefund(count: number): Promise<void> {
    const call = async (path: string, body: unknown) =>
      (await (
        await fetch(`${w.paystack.baseUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${PAYSTACK_TEST_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as { data: { reference: string } };
    // Their events go to their own systems, not to plainpay.
    w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, await otherSystemsHooks());
    try {
      for (let i = 0; i < count; i += 1) {
        const { data } = await call('/transaction/initialize', { email: 'someone@example.com', amount: 5000 });
        await w.paystack.complete(data.reference, 'success');
        await call('/refund', { transaction: data.reference, merchant_note: `another system's refund ${i}` });
      }
    } finally {
      w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${w.apiUrl}/hooks/paystack`);
    }
  }

  it('a lost refund answer with more refunds than one page still refunds once', async () => {
    const { id, reference } = await settledPayment(4000);
    const rf = await refund(id, { amount: 1500 });
    // Paystack takes the refund; its answer never reaches plainpay.
    arm('POST', /^\/refund$/, 'lose_answer');
    await processRailRefunds(w.runtime);
    const ours = () => w.paystack.refunds.filter((r) => r.merchant_note === rf);
    expect(ours()).toHaveLength(1);
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_reference: null });
    expect((await refundRow(rf)).submitted_at).not.toBeNull();

    // Meanwhile the integration's other systems refund more than a page of List Refunds.
    await otherSystemsRefund(120);

    // The next pass looks it up (every page since just before the send), finds it, never sends again.
    await nextPass(rf);
    expect(ours()).toHaveLength(1);
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_reference: String(ours()[0]!.id) });
    await w.paystack.setRefundStatus(ours()[0]!.id, 'processed');
    await nextPass(rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'succeeded' });
    expect(ours()).toEqual([expect.objectContaining({ amount: 150000, transaction: reference, status: 'processed' })]);
  });

  const balance = async () =>
    (await w.api.inject({ method: 'GET', url: '/v1/balance', headers: bearer(w.merchant.apiKey) })).json();

  it("a needs-attention refund reaches finance and an alert, and is paid once retried with the payer's bank account", async () => {
    const { id, reference } = await settledPayment(2500);
    const rf = await refund(id, {});
    const held = await balance();
    await processRailRefunds(w.runtime);
    const [sent] = w.paystack.refunds.filter((r) => r.merchant_note === rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_reference: String(sent!.id) });
    const alerts = 'plainpay_rail_refunds_needing_attention_total{rail="paystack"}';
    const alertsBefore = await metric(alerts);

    // Paystack cannot send it back to the card; its signed refund.* events reach plainpay and are acknowledged.
    await w.paystack.setRefundStatus(sent!.id, 'needs-attention');
    const events = w.paystack.deliveries.filter(
      (d) => d.event.startsWith('refund.') && JSON.parse(d.body).data.transaction_reference === reference,
    );
    expect(events.map((d) => [d.event, d.status])).toEqual([
      ['refund.pending', 200],
      ['refund.processing', 200],
      ['refund.needs-attention', 200],
    ]);
    await nextPass(rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_status: 'needs-attention' });

    // Finance sees it on the refund (API) and on the payment's page, with what to do and how.
    const listed = await w.api.inject({
      method: 'GET',
      url: `/v1/refunds?payment_id=${id}`,
      headers: bearer(w.merchant.apiKey),
    });
    expect(listed.json().data).toEqual([
      expect.objectContaining({
        id: rf,
        status: 'pending',
        provider_status: 'needs-attention',
        action_required: expect.stringContaining(
          `bank account. Ask the payer for their account number and bank, and give them to the operator of this plainpay instance with Paystack refund ${sent!.id}`,
        ),
      }),
    ]);
    expect(listed.json().data[0].action_required).toContain(`POST /refund/retry_with_customer_details/${sent!.id}`);
    const cookie = await dashboardCookie(w.merchant.apiKey);
    const page = await w.api.inject({ method: 'GET', url: `/dashboard/payments/${id}`, headers: { cookie } });
    expect(page.body).toContain(`data-refund-id="${rf}" data-provider-status="needs-attention"`);
    expect(page.body).toMatch(/data-action-required>Paystack cannot send this refund back/);

    // The operator is alerted, once: an error line naming the refund, and the counter.
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 50, refundId: rf, providerRefund: String(sent!.id), rail: 'paystack' }),
    );
    expect(await metric(alerts)).toBe(alertsBefore + 1);
    await nextPass(rf);
    expect(await metric(alerts)).toBe(alertsBefore + 1);
    // The refund's amount stays taken from the balance: it is owed to the payer.
    expect(await balance()).toEqual(held);

    // The operator retries it on Paystack with the bank account the payer gave; Paystack pays it.
    const retried = await fetch(`${w.paystack.baseUrl}/refund/retry_with_customer_details/${sent!.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PAYSTACK_TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(paystackFixture('refund_retry.request').body),
    });
    expect(retried.status).toBe(200);
    await nextPass(rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'pending', provider_status: 'processing' });
    await w.paystack.setRefundStatus(sent!.id, 'processed');
    await nextPass(rf);
    expect(await refundRow(rf)).toMatchObject({ status: 'succeeded', provider_status: 'processed' });
    const after = await w.api.inject({
      method: 'GET',
      url: `/v1/refunds?payment_id=${id}`,
      headers: bearer(w.merchant.apiKey),
    });
    expect(after.json().data[0]).toMatchObject({ status: 'succeeded', action_required: null });
    expect(w.paystack.refunds.filter((r) => r.merchant_note === rf)).toHaveLength(1);
  });

  it("acknowledges Paystack's published refund.* events, and moves nothing on them", async () => {
    const { id, reference } = await settledPayment(1200);
    const rf = await refund(id, {});
    const before = await refundRow(rf);
    for (const name of ['pending', 'processing', 'processed', 'failed', 'needs_attention']) {
      const sample = paystackFixture(`webhook.refund_${name}`).body;
      for (const [ref, verdict] of [
        [reference, 'noted'],
        [sample.data.transaction_reference, 'refused_unknown'],
      ]) {
        // Each message a moment after the last, so that the newest rail event is this one's.
        w.runtime.clock.advance(1);
        const body = JSON.stringify({ ...sample, data: { ...sample.data, transaction_reference: ref } });
        const res = await w.api.inject({
          method: 'POST',
          url: '/hooks/paystack',
          headers: {
            'content-type': 'application/json',
            'x-paystack-signature': paystackSignature(PAYSTACK_TEST_KEY, body),
          },
          payload: body,
        });
        expect({ name, status: res.statusCode, body: res.json() }).toEqual({
          name,
          status: 200,
          body: { received: true },
        });
        const [last] = await w.runtime.db
          .selectFrom('rail_events')
          .select(['verdict', 'detail'])
          .where('rail', '=', 'paystack')
          .orderBy('created_at', 'desc')
          .limit(1)
          .execute();
        expect(last!.verdict).toBe(verdict);
      }
    }
    expect(await refundRow(rf)).toEqual(before);
  });
});

describe('unknown is unknown', () => {
  it('an attempt recorded but never initialized ends abandoned, as Paystack answers its reference unknown', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 900, currency: 'NGN' });
    const scope = { accountId: w.merchant.accountId, livemode: false };
    const collection = await collectionFor(w.runtime.db, w.runtime.secretBox, scope, 'paystack');
    // plainpay stopped between recording the attempt (its reference is already kept) and initializing it.
    const started = await runSystemTool(
      w.runtime,
      startPaymentAttempt,
      { payment_id: p.id, rail: 'paystack', collection_id: collection!.account.id },
      scope,
    );
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('processing');
    w.runtime.clock.advance(31 * 60_000);
    await reconcileRailAttempts(w.runtime);
    const [attempt] = await attemptsOf(p.id);
    expect(attempt).toMatchObject({ id: started.attempt_id, outcome: 'abandoned' });
    expect(attempt!.failure_reason).toContain('Transaction reference not found (HTTP 400)');
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('pending');
  });

  /** Paystack's charge.success deliveries for a transaction: [try, HTTP status]. */
  const chargeDeliveries = (reference: string) =>
    w.paystack.deliveries
      .filter((d) => d.event === 'charge.success' && JSON.parse(d.body).data.reference === reference)
      .map((d) => [d.attempt, d.status]);

  it('initialize answered 5xx after Paystack acted: the attempt ends, the payer pays again, exactly one paid payment', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 4100, currency: 'NGN' });
    // Paystack creates the transaction; a gateway in front of it answers 502.
    arm('POST', /^\/transaction\/initialize$/, 'answer_5xx_after');
    const first = await form(p.id, { rail: 'paystack', email: 'ada@example.com' });
    expect(first.statusCode).toBe(503);
    // Plain words for the payer (the provider's own, HTTP 502, stay on the attempt).
    expect(first.body).toContain(
      'The payment provider had a problem starting this payment. Nothing was charged — try again in a minute or choose another method.',
    );
    expect(first.body).not.toContain('HTTP 502');
    expect(first.body).not.toContain('refused');
    const [failed] = await attemptsOf(p.id);
    expect(failed).toMatchObject({ outcome: 'failed', payer_url: null });
    // The transaction exists at Paystack, but its page never reached the payer: nobody can pay it.
    expect(w.paystack.transactions.get(failed!.provider_reference!)?.status).toBe('abandoned');
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('pending');

    // The payer tries again: a new attempt, a new reference, and this one is paid.
    const reference = await startPaystack(p.id);
    expect(reference).not.toBe(failed!.provider_reference);
    await w.paystack.complete(reference, 'success');
    w.runtime.clock.advance(31 * 60_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('paid');
    expect((await attemptsOf(p.id)).map((a) => [a.outcome, a.late])).toEqual([
      ['failed', false],
      ['succeeded', false],
    ]);
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
    const attemptIds = (await attemptsOf(p.id)).map((a) => a.id);
    expect(w.paystack.refunds.filter((r) => attemptIds.includes(r.merchant_note ?? ''))).toEqual([]);
    expect(w.paystack.transactions.get(failed!.provider_reference!)?.status).toBe('abandoned');
  });

  it('a Paystack event arriving during a verify outage is paid once when verify recovers, without a resend', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 7300, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    const [attempt] = await attemptsOf(p.id);
    arm('GET', /^\/transaction\/verify\//, 'unavailable', Number.POSITIVE_INFINITY);
    try {
      await w.paystack.complete(reference, 'success');
      // plainpay kept the signed event and said so: Paystack has nothing to send again.
      expect(chargeDeliveries(reference)).toEqual([[1, 200]]);
      expect((await payment(w.merchant.apiKey, p.id)).status).toBe('processing');
      w.runtime.clock.advance(31_000);
      await reconcileRailAttempts(w.runtime);
      expect((await payment(w.merchant.apiKey, p.id)).status).toBe('processing');
    } finally {
      disarm();
    }
    // Verify is back: plainpay asks it again itself, and pays.
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('paid');
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
    expect((await attemptsOf(p.id))[0]).toMatchObject({ outcome: 'succeeded', unconfirmed_event_at: null });
    // Nothing false in the log: the event did arrive.
    expect(logged.filter((l) => l.attemptId === attempt!.id && /webhook URL/.test(l.msg))).toEqual([]);
    // Hours later Paystack has sent nothing again, and the payment is still paid once.
    w.runtime.clock.advance(2 * 60 * 60_000);
    await w.paystack.deliverDueWebhooks();
    await reconcileRailAttempts(w.runtime);
    expect(chargeDeliveries(reference)).toEqual([[1, 200]]);
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(1);
  });

  it('a late success whose event arrives during a verify outage is recorded once when verify recovers, and refunded', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 4400, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    const [attempt] = await attemptsOf(p.id);
    // The payer leaves Paystack's page: back on the checkout, the attempt ends and the payment is payable.
    const back = await w.paystack.complete(reference, 'abandon');
    await w.checkout.inject({ method: 'GET', url: back.replace(w.checkoutUrl, '') });
    expect((await attemptsOf(p.id))[0]).toMatchObject({ outcome: 'abandoned' });
    arm('GET', /^\/transaction\/verify\//, 'unavailable', Number.POSITIVE_INFINITY);
    try {
      // The payer goes back to the still-open Paystack page and pays, while verify is failing.
      await w.paystack.complete(reference, 'success');
      expect(chargeDeliveries(reference)).toEqual([[1, 200]]);
      w.runtime.clock.advance(31_000);
      await reconcileRailAttempts(w.runtime);
      expect((await attemptsOf(p.id))[0]).toMatchObject({ outcome: 'abandoned' });
    } finally {
      disarm();
    }
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await attemptsOf(p.id))[0]).toMatchObject({
      outcome: 'succeeded',
      late: true,
      refund_status: 'refunded',
      unconfirmed_event_at: null,
    });
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('pending');
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect(await eventsOf(p.id, 'payment.late_success')).toHaveLength(1);
    expect(await eventsOf(p.id, 'payment.paid')).toHaveLength(0);
    expect(w.paystack.refunds.filter((r) => r.merchant_note === attempt!.id)).toHaveLength(1);
    expect(chargeDeliveries(reference)).toEqual([[1, 200]]);
  });

  it('a success verify reports with no signed event is not credited, and the alert says exactly that', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 5100, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    const [attempt] = await attemptsOf(p.id);
    w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, 'http://127.0.0.1:9/nowhere');
    try {
      await w.paystack.complete(reference, 'success');
    } finally {
      w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${w.apiUrl}/hooks/paystack`);
    }
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('processing');
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 50,
        attemptId: attempt!.id,
        msg: expect.stringContaining('no signed charge.success for it has reached plainpay, so it is not credited'),
      }),
    );
    // Paystack's retry of the event, an hour later in test mode, is what pays it.
    w.runtime.clock.advance(60 * 60_000);
    await w.paystack.deliverDueWebhooks();
    expect(chargeDeliveries(reference)).toEqual([
      [1, 'error'],
      [2, 200],
    ]);
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('paid');
  });

  it("Paystack's published charge.success sample pays, once verify confirms it", async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 100, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, 'http://127.0.0.1:9/nowhere');
    try {
      await w.paystack.complete(reference, 'success');
    } finally {
      w.paystack.setWebhookUrl(PAYSTACK_TEST_KEY, `${w.apiUrl}/hooks/paystack`);
    }
    // The sample as published (a 2016 event: metadata 0, fees null, no requested_amount), naming this transaction.
    const sample = paystackFixture('webhook.charge_success').body;
    expect(sample.data).toMatchObject({ amount: 10000, currency: 'NGN' });
    const body = JSON.stringify({ ...sample, data: { ...sample.data, reference } });
    const res = await w.api.inject({
      method: 'POST',
      url: '/hooks/paystack',
      headers: {
        'content-type': 'application/json',
        'x-paystack-signature': paystackSignature(PAYSTACK_TEST_KEY, body),
      },
      payload: body,
    });
    expect(res.json()).toEqual({ received: true });
    expect((await payment(w.merchant.apiKey, p.id)).status).toBe('paid');
  });

  // Last in the file: it moves the clock three days on.
  it('an ended attempt whose signed event verify never confirms is given up after 72 hours, with an error saying so', async () => {
    const p = await createPayment(w.api, w.merchant.apiKey, { amount: 3900, currency: 'NGN' });
    const reference = await startPaystack(p.id);
    const [attempt] = await attemptsOf(p.id);
    const back = await w.paystack.complete(reference, 'abandon');
    await w.checkout.inject({ method: 'GET', url: back.replace(w.checkoutUrl, '') });
    arm('GET', /^\/transaction\/verify\//, 'unavailable', Number.POSITIVE_INFINITY);
    try {
      await w.paystack.complete(reference, 'success');
      w.runtime.clock.advance(71 * 60 * 60_000);
      await reconcileRailAttempts(w.runtime);
      expect((await attemptsOf(p.id))[0]!.unconfirmed_event_at).not.toBeNull();
      w.runtime.clock.advance(2 * 60 * 60_000);
      await reconcileRailAttempts(w.runtime);
    } finally {
      disarm();
    }
    expect((await attemptsOf(p.id))[0]).toMatchObject({ outcome: 'abandoned', unconfirmed_event_at: null });
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 50,
        attemptId: attempt!.id,
        msg: expect.stringContaining('verify has not confirmed it since: no longer asked'),
      }),
    );
    // No longer asked: verify, back, is not called for it again.
    const verifications = async () =>
      (
        await w.runtime.db
          .selectFrom('rail_events')
          .select('id')
          .where('attempt_id', '=', attempt!.id)
          .where('kind', '=', 'verification')
          .execute()
      ).length;
    const before = await verifications();
    w.runtime.clock.advance(31_000);
    await reconcileRailAttempts(w.runtime);
    expect(await verifications()).toBe(before);
  });
});
