// What happened, counted (issue 35): a webhook delivery a receiver refused, the calls to a payer
// rail's provider (Paystack's strict fake, test/fakes/paystack.ts) and a refund each move their
// counter in GET /metrics; and a scrape or the OpenAPI document is compressed when asked for.
// Counters are per process and this worker runs other files too, so each check is a difference.

import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { processRailRefunds } from '../src/payments/rails/refunds.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { runDeliveryBatch } from '../src/webhooks/delivery-worker.ts';
import { bearer, extraKey, testAccount } from './support/harness.ts';
import { ADDRESS_A, editPolicy, fund, post } from './support/money.ts';
import { createPayment } from './support/payments.ts';
import { operatorCollects, PAYSTACK_TEST_KEY, type RailsWorld, railsWorld } from './support/rails.ts';
import { startReceiver, writeEvent } from './support/webhooks.ts';

const METRICS_TOKEN = 'activity-metrics-token-0123456789abcdef';

let w: RailsWorld;

beforeAll(async () => {
  w = await railsWorld({ env: { METRICS_TOKEN } });
  await operatorCollects(w.runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY });
}, 60_000);

async function scrape(): Promise<string> {
  const res = await w.api.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
  expect(res.statusCode, res.body).toBe(200);
  return res.body;
}

/** A sample's value by its name and labels as the exposition writes them; 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('GET /metrics counts', () => {
  it('a failed webhook delivery, the calls to Paystack, and a refund', async () => {
    const before = await scrape();

    // A receiver that answers 500: the attempt fails, counted with its latency.
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end('down');
    });
    await writeEvent(w.runtime, {
      accountId: w.merchant.accountId,
      type: 'payment.settled',
      data: { reference: 'order-500' },
      webhookUrl: receiver.url,
    });
    // Only this event: the merchant's other events go to plainpay's own hosts and succeed.
    expect(await runDeliveryBatch(w.runtime, { accountIds: [w.merchant.accountId], concurrency: 1 })).toBe(1);
    expect(receiver.received).toHaveLength(1);

    // A payment paid through Paystack (initialize, then verify on its webhook), settled, refunded.
    const payment = await createPayment(w.api, w.merchant.apiKey, { amount: 250, currency: 'NGN' });
    const started = await w.checkout.inject({
      method: 'POST',
      url: `/pay/${payment.id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
      payload: new URLSearchParams({ rail: 'paystack', email: 'ada@example.com' }).toString(),
    });
    expect(started.statusCode, started.body).toBe(303);
    const attempt = await w.runtime.db
      .selectFrom('payment_attempts')
      .select('provider_reference')
      .where('payment_id', '=', payment.id)
      .executeTakeFirstOrThrow();
    await w.paystack.complete(attempt.provider_reference!, 'success');
    await settlePaidPayments(w.runtime, { chunk: 50, testModeOnChain: async () => false });
    const refund = await w.api.inject({
      method: 'POST',
      url: `/v1/payments/${payment.id}/refunds`,
      headers: { ...bearer(w.merchant.apiKey), 'content-type': 'application/json' },
      payload: { amount: 100 },
    });
    expect(refund.statusCode, refund.body).toBe(200);
    // The payer-rails worker asks Paystack for it.
    await processRailRefunds(w.runtime);

    const after = await scrape();
    const grew = (series: string): number => sample(after, series) - sample(before, series);
    expect(grew('plainpay_webhook_deliveries_total{outcome="http_status"}')).toBe(1);
    expect(grew('plainpay_webhook_delivery_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(grew('plainpay_provider_calls_total{rail="paystack",operation="initialize_transaction",outcome="ok"}')).toBe(
      1,
    );
    expect(
      grew('plainpay_provider_calls_total{rail="paystack",operation="verify_transaction",outcome="ok"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(grew('plainpay_provider_calls_total{rail="paystack",operation="create_refund",outcome="ok"}')).toBe(1);
    expect(
      grew('plainpay_provider_call_duration_seconds_count{rail="paystack",operation="initialize_transaction"}'),
    ).toBe(1);
    expect(grew('plainpay_refunds_total{outcome="executed"}')).toBe(1);
    // Every outcome is there from the start, at 0 until it happens.
    for (const outcome of ['executed', 'held', 'denied', 'failed']) {
      expect(after).toMatch(new RegExp(`^plainpay_payouts_total\\{outcome="${outcome}"\\} \\d+$`, 'm'));
    }
    for (const outcome of ['executed', 'rejected', 'denied', 'failed']) {
      expect(after).toMatch(new RegExp(`^plainpay_payout_approvals_total\\{outcome="${outcome}"\\} \\d+$`, 'm'));
    }
  });

  it('a payout refused for want of balance is counted as failed', async () => {
    const before = await scrape();
    const res = await w.api.inject({
      method: 'POST',
      url: '/v1/payouts',
      headers: { ...bearer(w.merchant.apiKey), 'content-type': 'application/json' },
      payload: { amount: 1_000_000, asset: 'USDC', to_address: '0x1111111111111111111111111111111111111111' },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    const after = await scrape();
    const failed = 'plainpay_payouts_total{outcome="failed"}';
    const denied = 'plainpay_payouts_total{outcome="denied"}';
    // Refused by the policy (a cap) or by the balance: one of the two, once.
    expect(sample(after, failed) + sample(after, denied) - sample(before, failed) - sample(before, denied)).toBe(1);
  });
});

describe('held payouts', () => {
  it('count once as requests (held), and their approval or rejection in the approvals counter', async () => {
    const m = await testAccount(w.runtime, { name: 'Held payouts' });
    await fund(w.api, m.apiKey, 1000);
    const put = await editPolicy(w.api, m.apiKey, (policy) => {
      policy.channels.api.confirm_above = '10';
    });
    expect(put.statusCode, put.body).toBe(200);
    const approver = await extraKey(w.runtime, m.accountId, { scopes: ['approvals', 'payments:read'] });
    const before = await scrape();

    const approvedHold = await post(w.api, m.apiKey, '/v1/payouts', { amount: 11, to_address: ADDRESS_A });
    expect(approvedHold.statusCode, approvedHold.body).toBe(202);
    const approved = await post(w.api, approver, `/v1/confirmations/${approvedHold.json().confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json().result).toMatchObject({ object: 'payout', amount: 11 });
    const rejectedHold = await post(w.api, m.apiKey, '/v1/payouts', { amount: 12, to_address: ADDRESS_A });
    expect(rejectedHold.statusCode, rejectedHold.body).toBe(202);
    const rejected = await post(w.api, approver, `/v1/confirmations/${rejectedHold.json().confirmation_id}/reject`);
    expect(rejected.statusCode, rejected.body).toBe(200);

    const after = await scrape();
    const grew = (series: string): number => sample(after, series) - sample(before, series);
    // Two requests, both held: counted once each, and never again as executed.
    expect(grew('plainpay_payouts_total{outcome="held"}')).toBe(2);
    expect(grew('plainpay_payouts_total{outcome="executed"}')).toBe(0);
    expect(after).not.toMatch(/^plainpay_payouts_total\{outcome="rejected"\}/m);
    // What the decisions did: one payout created, one refused by a human.
    expect(grew('plainpay_payout_approvals_total{outcome="executed"}')).toBe(1);
    expect(grew('plainpay_payout_approvals_total{outcome="rejected"}')).toBe(1);
    expect(grew('plainpay_payout_approvals_total{outcome="failed"}')).toBe(0);
  });
});

describe('compression', () => {
  it('GET /metrics is sent gzip when the scraper asks, and decompresses to the exposition', async () => {
    const res = await w.api.inject({
      method: 'GET',
      url: '/metrics',
      headers: { ...bearer(METRICS_TOKEN), 'accept-encoding': 'gzip' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers.vary).toMatch(/accept-encoding/i);
    const text = gunzipSync(res.rawPayload).toString('utf8');
    expect(res.rawPayload.length).toBeLessThan(text.length / 3);
    // The same document as an uncompressed scrape: the same series, in the same order (values move).
    const plain = await scrape();
    const series = (body: string) =>
      body
        .split('\n')
        .filter((line) => line.startsWith('# TYPE '))
        .join('\n');
    expect(series(text)).toBe(series(plain));
    // Without Accept-Encoding: as before, plain text.
    const uncompressed = await w.api.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
    expect(uncompressed.headers['content-encoding']).toBeUndefined();
  });

  it('GET /openapi.json is sent gzip or br as negotiated, byte for byte the same document', async () => {
    const plain = await w.api.inject({ method: 'GET', url: '/openapi.json' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzip = await w.api.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.rawPayload).toString('utf8')).toBe(plain.body);
    const br = await w.api.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { 'accept-encoding': 'gzip;q=0.5, br' },
    });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).toString('utf8')).toBe(plain.body);
    expect(JSON.parse(plain.body)).toHaveProperty('openapi');
  });

  it('small answers are not compressed', async () => {
    const res = await w.api.inject({ method: 'GET', url: '/healthz', headers: { 'accept-encoding': 'gzip' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
  });
});
