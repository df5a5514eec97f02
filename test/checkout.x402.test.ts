// A checkout session paid by an AI agent over x402 v2, on the embedded devnet: the checkout URL
// answers an agent with 402 and PAYMENT-REQUIRED (a browser still gets the page), and what a
// session with nothing to pay answers (docs/x402.md, "Checkout sessions paid in USDC").

import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import type { Runtime } from '../src/runtime.ts';
import { freePort } from './support/server.ts';
import { type TestAccount, testAccount, testApp } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { settlementRuntime } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime & { clock: { advance(ms: number): void } };
let api: FastifyInstance;
let checkout: FastifyInstance;
let checkoutBase: string;
let merchant: TestAccount;

beforeAll(async () => {
  const port = await freePort();
  checkoutBase = `http://127.0.0.1:${port}`;
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { CHECKOUT_BASE_URL: checkoutBase, WEBHOOK_ALLOW_PRIVATE: '1' });
  api = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  await checkout.listen({ host: '127.0.0.1', port });
  merchant = await testAccount(runtime, { name: 'Ama Prints' });
}, 60_000);

afterAll(async () => {
  await checkout?.close();
  await chain?.close();
});

const AGENT = { accept: '*/*' };

describe('GET /pay/:id: the page for a browser, x402 for an agent', () => {
  it('answers an agent 402 with the session’s locked gross in USDC, in the header and the body', async () => {
    const payment = await createPayment(api, merchant.apiKey, { amount: 5000, currency: 'NGN', description: 'Prints' });
    const row = await findPaymentById(runtime.db, payment.id);
    const res = await checkout.inject({ url: `/pay/${payment.id}`, headers: AGENT });
    expect(res.statusCode).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers['payment-required'] as string);
    expect(required).toEqual({
      x402Version: 2,
      error: 'PAYMENT-SIGNATURE header is required',
      resource: {
        url: payment.checkout_url,
        description: expect.stringContaining('USDC'),
        mimeType: 'application/json',
      },
      accepts: [
        {
          scheme: 'exact',
          network: `eip155:${chain.chainId}`,
          amount: row!.gross_settlement_minor.toString(),
          asset: chain.tokenAddress,
          payTo: chain.batchAddress,
          maxTimeoutSeconds: 300,
          extra: { name: 'Plain USD', version: '2' },
        },
      ],
    });
    expect(res.json()).toEqual(required);

    const page = await checkout.inject({ url: `/pay/${payment.id}`, headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['payment-required']).toBeUndefined();
  });

  it('answers a paid session with its public status, an expired one 409, an unknown one 404: no 402', async () => {
    const paid = await createPayment(api, merchant.apiKey);
    expect((await payPayment(api, merchant.apiKey, paid.id)).statusCode).toBe(200);
    const res = await checkout.inject({ url: `/pay/${paid.id}`, headers: AGENT });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual((await api.inject({ url: `/checkout/${paid.id}` })).json());

    const expiring = await createPayment(api, merchant.apiKey, { ttl_minutes: 1 });
    runtime.clock.advance(61_000);
    const expired = await checkout.inject({ url: `/pay/${expiring.id}`, headers: AGENT });
    expect(expired.statusCode).toBe(409);
    expect(expired.json().error.message).toMatch(/has expired/);
    expect(expired.headers['payment-required']).toBeUndefined();

    const unknown = await checkout.inject({ url: '/pay/pay_0000000000000000000000', headers: AGENT });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.type).toBe('invalid_request_error');
  });

  it('offers a live session nothing on a test network: 402 with invalid_network and no requirement', async () => {
    const live = await testAccount(runtime, { livemode: true });
    const payment = await createPayment(api, live.apiKey);
    const res = await checkout.inject({ url: `/pay/${payment.id}`, headers: { accept: 'application/json' } });
    expect(res.statusCode).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers['payment-required'] as string);
    expect(required.error).toBe('invalid_network');
    expect(required.accepts).toEqual([]);
    expect(res.json().message).toMatch(/live checkout session/);
  });
});
