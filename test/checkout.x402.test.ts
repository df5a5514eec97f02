// A checkout session paid by an AI agent over x402 v2, on the embedded devnet: the checkout URL
// answers an agent with 402 and PAYMENT-REQUIRED (a browser still gets the page); the ecosystem's
// client (@x402/fetch with a viem account) pays it once, however often its payment is sent; and
// payments the session must refuse move nothing (docs/x402.md, "Checkout sessions paid in USDC").

import { randomBytes } from 'node:crypto';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { Network } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import type { FastifyInstance } from 'fastify';
import { type Address, encodeFunctionData, type Hex, keccak256, toHex } from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { startDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../src/x402/verify-exact.ts';
import { findPaymentById } from '../src/db/repositories/payments.ts';
import type { Runtime } from '../src/runtime.ts';
import { freePort } from './support/server.ts';
import { type TestAccount, testAccount, testApp } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';
import { startReceiver, type TestReceiver } from './support/webhooks.ts';

let chain: ChainConnection;
let runtime: Runtime & { clock: { advance(ms: number): void } };
let api: FastifyInstance;
let checkout: FastifyInstance;
let checkoutBase: string;
let merchant: TestAccount;
let receiver: TestReceiver;
const stops: Array<() => Promise<void>> = [];
const agent = privateKeyToAccount(keccak256(toHex('checkout x402 agent')));

beforeAll(async () => {
  const port = await freePort();
  checkoutBase = `http://127.0.0.1:${port}`;
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { CHECKOUT_BASE_URL: checkoutBase, WEBHOOK_ALLOW_PRIVATE: '1' });
  api = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  await checkout.listen({ host: '127.0.0.1', port });
  merchant = await testAccount(runtime, { name: 'Ama Prints' });
  receiver = await startReceiver();
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [agent.address, 100_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
  const settlement = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  stops.push(() => settlement.stop());
  stops.push(startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [merchant.accountId] }));
}, 60_000);

afterAll(async () => {
  for (const stop of stops) await stop();
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

/** A PAYMENT-SIGNATURE header: `account`'s EIP-3009 authorization of the session's requirement, with `change` applied. */
async function paymentSignature(
  account: PrivateKeyAccount,
  checkoutUrl: string,
  change: { value?: bigint; to?: Address; validBefore?: bigint } = {},
): Promise<string> {
  const res = await fetch(checkoutUrl, { headers: AGENT });
  const accepted = decodePaymentRequiredHeader(res.headers.get('payment-required')!).accepts[0]!;
  const authorization = {
    from: account.address,
    to: change.to ?? (accepted.payTo as Address),
    value: change.value ?? BigInt(accepted.amount),
    validAfter: 0n,
    validBefore: change.validBefore ?? BigInt(Math.floor(Date.now() / 1000) + 300),
    nonce: toHex(randomBytes(32)) as Hex,
  };
  const signature = await account.signTypedData({
    domain: {
      name: accepted.extra!.name as string,
      version: accepted.extra!.version as string,
      chainId: chain.chainId,
      verifyingContract: accepted.asset as Address,
    },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const payload = {
    x402Version: 2,
    resource: { url: checkoutUrl },
    accepted,
    payload: {
      signature,
      authorization: Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, String(v)])),
    },
  };
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

/** The agent's and the treasury's token balances: what any payment would change. */
const balances = async () => [await readTokenBalance(chain, agent.address), await readTreasuryBalance(chain)];

describe('refused payments on the checkout URL move nothing', () => {
  it('a short amount, a wrong recipient, a never-expiring authorization: 402 with the specification’s reason; a paid session: 409', async () => {
    const payment = await createPayment(api, merchant.apiKey);
    const before = await balances();
    const cases = [
      [{ value: 1n }, 'invalid_exact_evm_payload_authorization_value'],
      [{ to: agent.address }, 'invalid_exact_evm_payload_recipient_mismatch'],
      // Beyond the database's bigint, and beyond maxTimeoutSeconds: refused before it is recorded.
      [{ validBefore: 2n ** 256n - 1n }, 'invalid_exact_evm_payload_authorization_valid_before'],
    ] as const;
    for (const [change, reason] of cases) {
      const res = await fetch(payment.checkout_url, {
        headers: { ...AGENT, 'payment-signature': await paymentSignature(agent, payment.checkout_url, change) },
      });
      expect(res.status, reason).toBe(402);
      const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
      expect(required.error).toBe(reason);
      expect(required.accepts).toHaveLength(1);
      expect(((await res.json()) as { message: string }).message).toMatch(/Nothing was charged/);
    }
    expect((await findPaymentById(runtime.db, payment.id))?.status).toBe('pending');

    const paid = await createPayment(api, merchant.apiKey);
    const signature = await paymentSignature(agent, paid.checkout_url);
    expect((await payPayment(api, merchant.apiKey, paid.id)).statusCode).toBe(200);
    const res = await fetch(paid.checkout_url, { headers: { ...AGENT, 'payment-signature': signature } });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/already paid/);
    expect(await balances()).toEqual(before);
  });

  it('a PAYMENT-SIGNATURE that is not base64 JSON is a 400 naming the header', async () => {
    const payment = await createPayment(api, merchant.apiKey);
    const res = await checkout.inject({
      url: `/pay/${payment.id}`,
      headers: { ...AGENT, 'payment-signature': 'not a payload!' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'PAYMENT-SIGNATURE' });
  });
});

describe('an agent pays a checkout session with @x402/fetch', () => {
  it('settles it, the merchant’s webhook fires once, and the same payment sent again pays nothing more', async () => {
    const payment = await createPayment(api, merchant.apiKey, { webhook_url: receiver.url, reference: 'agent-1' });
    const sent: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      const signature = new Request(input, init).headers.get('payment-signature');
      if (signature) sent.push(signature);
      return fetch(input, init);
    };
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:*', client: new ExactEvmClient(agent) }],
      spendControls: { allowedAssets: [{ network: `eip155:${chain.chainId}` as Network, asset: chain.tokenAddress }] },
    });
    const pay = wrapFetchWithPayment(recording, client);
    const [agentBefore, treasuryBefore] = await balances();
    const gross = (await findPaymentById(runtime.db, payment.id))!.gross_settlement_minor;

    const res = await pay(payment.checkout_url);
    expect(res.status).toBe(200);
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: `eip155:${chain.chainId}`,
      payer: agent.address,
    });
    expect(((await res.json()) as { id: string; status: string }).id).toBe(payment.id);
    expect(sent).toHaveLength(1);
    expect(await readTokenBalance(chain, agent.address)).toBe(agentBefore! - gross);
    expect(await readTreasuryBalance(chain)).toBe(treasuryBefore! + gross);

    const settledEvents = () => receiver.received.filter((r) => r.body.includes('"payment.settled"'));
    await waitUntil('payment.settled delivered', async () => settledEvents().length > 0);
    expect(settledEvents()[0]!.body).toContain(payment.id);

    const again = await fetch(payment.checkout_url, { headers: { ...AGENT, 'payment-signature': sent[0]! } });
    expect(again.status).toBe(200);
    expect(decodePaymentResponseHeader(again.headers.get('payment-response')!)).toEqual(settled);
    expect(await readTokenBalance(chain, agent.address)).toBe(agentBefore! - gross);
    expect(await readTreasuryBalance(chain)).toBe(treasuryBefore! + gross);
    await waitUntil('settled', async () => (await findPaymentById(runtime.db, payment.id))?.status === 'settled');
    expect(settledEvents()).toHaveLength(1);
  });
});
