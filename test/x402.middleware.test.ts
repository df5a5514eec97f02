// A merchant's own API protected by the ecosystem's middleware (@x402/express, its
// HTTPFacilitatorClient pointed at plainpay's /x402 with the merchant's API key), paid by an agent
// with the ecosystem's client (@x402/fetch with a viem account), on the embedded devnet, with the
// settlement and delivery workers running: the payment is settled once, credited once, logged once
// and announced once; the same payload settled again pays nothing more; and what settle must
// refuse is refused with the specification's reason, moving nothing.

import type { AddressInfo } from 'node:net';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, HTTPFacilitatorClient } from '@x402/core/http';
import type { Network } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client';
import { ExactEvmScheme as ExactEvmServer } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import express from 'express';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { type Address, encodeFunctionData, type Hex, keccak256, toHex } from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance, readTreasuryBalance } from '../src/chain/chain.ts';
import { plainUsdAbi } from '../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS } from '../src/chain/devnet.ts';
import { sendAs } from '../src/chain/testing.ts';
import { getLedgerBalance, ledgerAccount } from '../src/ledger/ledger.ts';
import { checkCollectionInvariant } from '../src/payments/rails/collections.ts';
import { reconcileCollections } from '../src/reconciliation/collections.ts';
import { dayWindow } from '../src/reconciliation/day.ts';
import type { Runtime } from '../src/runtime.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { startDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse } from '../src/x402/messages.ts';
import { settleAuthorization } from '../src/x402/settle.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../src/x402/verify-exact.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { expectSettlementInvariants, settlementRuntime, waitUntil } from './support/settlement.ts';
import { createPayment } from './support/payments.ts';
import { startReceiver, type TestReceiver } from './support/webhooks.ts';

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let merchant: TestAccount;
let merchantUrl: string;
let receiver: TestReceiver;
let endpointSecret: string;
const stops: Array<() => Promise<void>> = [];
const settled: Array<{ payload: PaymentPayload; requirements: PaymentRequirements }> = [];
const agent = privateKeyToAccount(keccak256(toHex('x402 middleware agent')));
let kind: SupportedResponse['kinds'][number];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  const plainpay = await app.listen({ host: '127.0.0.1', port: 0 });
  const mint = encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [agent.address, 10_000_000n] });
  await sendAs(chain, DEV_ACCOUNTS.deployer.privateKey, { to: chain.tokenAddress, data: mint });
  kind = ((await app.inject({ url: '/x402/supported', headers: bearer(merchant.apiKey) })).json() as SupportedResponse)
    .kinds[0]!;

  receiver = await startReceiver();
  const endpoint = await app.inject({
    method: 'POST',
    url: '/v1/webhook_endpoints',
    headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
    payload: JSON.stringify({ url: receiver.url, enabled_events: ['payment.settled'] }),
  });
  expect(endpoint.statusCode, endpoint.body).toBe(200);
  endpointSecret = endpoint.json().secret;
  const settlement = startSettlementWorker(runtime, { pollIntervalMs: 20, batchWindowMs: 50 });
  stops.push(() => settlement.stop());
  const delivery = startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [merchant.accountId] });
  stops.push(() => delivery());

  // The merchant's side, as docs/x402.md tells a merchant to write it.
  const auth = { Authorization: `Bearer ${merchant.apiKey}` };
  const facilitator = new HTTPFacilitatorClient({
    url: `${plainpay}/x402`,
    createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
  });
  const settle = facilitator.settle.bind(facilitator);
  facilitator.settle = async (payload, requirements) => {
    settled.push({ payload: payload as PaymentPayload, requirements: requirements as PaymentRequirements });
    return await settle(payload, requirements);
  };
  const network = kind.network as Network;
  const server = new x402ResourceServer(facilitator).register(network, new ExactEvmServer());
  const merchantApp = express();
  merchantApp.use(
    paymentMiddleware(
      {
        'GET /report': {
          accepts: {
            scheme: 'exact',
            network,
            payTo: kind.extra.payTo,
            price: {
              amount: '250000',
              asset: kind.extra.asset,
              extra: { name: kind.extra.name, version: kind.extra.version },
            },
          },
          description: 'The weekly report',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  );
  merchantApp.get('/report', (_req, res) => {
    res.json({ report: 'the numbers' });
  });
  const listening = merchantApp.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => listening.once('listening', () => resolve()));
  merchantUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  stops.push(() => new Promise((resolve) => listening.close(() => resolve())));
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await receiver?.close();
  await chain?.close();
});

/** What moved: the agent's and the treasury's tokens, and how many payments and authorizations exist. */
async function snapshot(payer: Address = agent.address) {
  const [payerTokens, treasury, payments, authorizations] = await Promise.all([
    readTokenBalance(chain, payer),
    readTreasuryBalance(chain),
    runtime.db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow(),
    runtime.db
      .selectFrom('x402_authorizations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { payerTokens, treasury, payments: Number(payments.n), authorizations: Number(authorizations.n) };
}

function settleAt(key: string, body: unknown) {
  return app.inject({
    method: 'POST',
    url: '/x402/settle',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

describe('@x402/express pointed at plainpay, paid by @x402/fetch', () => {
  it("answers an unpaid request with 402 and requirements built from plainpay's /x402/supported", async () => {
    const answer = await fetch(`${merchantUrl}/report`);
    expect(answer.status).toBe(402);
    const required = decodePaymentRequiredHeader(answer.headers.get('payment-required')!);
    expect(required.x402Version).toBe(2);
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: `eip155:${chain.chainId}`,
        amount: '250000',
        asset: chain.tokenAddress,
        payTo: chain.batchAddress,
        maxTimeoutSeconds: expect.any(Number),
        extra: { name: 'Plain USD', version: '2' },
      },
    ]);
  });

  it('pays once: the resource, the balance, the ledger, the action log and one verified payment.settled', async () => {
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:*', client: new ExactEvmClient(agent) }],
      spendControls: { allowedAssets: [{ network: kind.network as Network, asset: kind.extra.asset }] },
    });
    const pay = wrapFetchWithPayment(fetch, client);
    const before = await snapshot();
    const answer = await pay(`${merchantUrl}/report`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ report: 'the numbers' });
    const receipt = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
    expect(receipt).toMatchObject({ success: true, payer: agent.address, network: kind.network });

    const after = await snapshot();
    expect(after.payerTokens).toBe(before.payerTokens - 250_000n);
    expect(after.treasury).toBe(before.treasury + 250_000n);
    const authorization = await runtime.db.selectFrom('x402_authorizations').selectAll().executeTakeFirstOrThrow();
    expect(authorization).toMatchObject({ status: 'confirmed', tx_hash: receipt.transaction, value_minor: 250_000n });
    await waitUntil('the payment settled', async () => (await payment(authorization.payment_id)).status === 'settled');
    const paid = await payment(authorization.payment_id);
    expect(paid).toMatchObject({ currency: 'USDC', amount_minor: 250_000n, gross_settlement_minor: 250_000n });
    expect(paid.metadata).toEqual({ x402_resource: `${merchantUrl}/report`, x402_payer: agent.address.toLowerCase() });
    // No payout address: settled into the custodial balance, which holds exactly the merchant's share.
    expect(await getLedgerBalance(runtime.db, ledgerAccount.merchant(merchant.accountId, false, 'USDC'))).toBe(
      paid.settlement_minor,
    );
    const postings = await runtime.db
      .selectFrom('ledger_postings')
      .select(['kind', 'reference'])
      .where('reference', 'in', [authorization.id, paid.id])
      .orderBy('id')
      .execute();
    expect(postings).toEqual([
      { kind: 'usdc_received', reference: authorization.id },
      { kind: 'payment_received', reference: paid.id },
    ]);
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .select(['tool', 'channel'])
      .where('account_id', '=', merchant.accountId)
      .orderBy('created_at')
      .execute();
    expect(actions).toEqual([
      { tool: 'record_x402_authorization', channel: 'system' },
      { tool: 'confirm_x402_authorization', channel: 'system' },
      { tool: 'start_payment_settlements', channel: 'system' },
    ]);
    await waitUntil('payment.settled delivered', async () => receiver.received.length > 0);
    const events = receiver.received.map(
      (r) => new Webhook(endpointSecret).verify(r.body, r.headers as Record<string, string>) as never,
    ) as Array<{ type: string; data: { object: { id: string; status: string } } }>;
    expect(events.map((e) => [e.type, e.data.object.id, e.data.object.status])).toEqual([
      ['payment.settled', paid.id, 'settled'],
    ]);
    // Collected by the operator's own treasury: no credit without collection (docs/rails.md), and
    // the reconciliation counts it on both sides, the chain standing for the usdc rail's provider.
    expect(await checkCollectionInvariant(runtime.db)).toEqual([]);
    const collections = await reconcileCollections(runtime, dayWindow(runtime.clock.now().toISOString().slice(0, 10)));
    expect(collections.lines.filter((l) => l.payment_id === paid.id)).toEqual([]);
    expect(collections.totals).toContainEqual({
      livemode: false,
      currency: 'USDC',
      rail: 'usdc',
      provider_count: 1,
      provider_amount_minor: '250000',
      payer_fees_minor: '0',
      ledger_count: 1,
      ledger_amount_minor: '250000',
    });
    await expectSettlementInvariants(runtime, chain);
  });

  it('answers the same payload settled twice with the first result, and pays nothing more', async () => {
    const [first] = settled;
    const before = await snapshot();
    const body = { x402Version: 2, paymentPayload: first!.payload, paymentRequirements: first!.requirements };
    const answers = await Promise.all([settleAt(merchant.apiKey, body), settleAt(merchant.apiKey, body)]);
    const original = await runtime.db.selectFrom('x402_authorizations').selectAll().executeTakeFirstOrThrow();
    for (const answer of answers) {
      expect(answer.statusCode).toBe(200);
      expect(answer.json()).toEqual({
        success: true,
        payer: agent.address,
        transaction: original.tx_hash,
        network: kind.network,
      });
    }
    expect(await snapshot()).toEqual(before);

    // The same authorization for another merchant is refused and moves nothing.
    const other = await testAccount(runtime, { name: 'Another merchant' });
    const refused = (await settleAt(other.apiKey, body)).json() as SettleResponse;
    expect(refused).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_evm_nonce_already_used',
      transaction: '',
    });
    expect(await snapshot()).toEqual(before);
  });
});

const poor = privateKeyToAccount(keccak256(toHex('x402 payer without funds')));
const stranger = privateKeyToAccount(keccak256(toHex('x402 someone else')));

describe('settle refuses, with the specification reason, and moves nothing', () => {
  it.each([
    ['a signature by another key', () => signed({}, stranger), 'invalid_exact_evm_payload_signature'],
    [
      'an amount short of the price',
      () => signed({ value: 249_999n }),
      'invalid_exact_evm_payload_authorization_value',
    ],
    ['a wrong recipient', () => signed({ to: stranger.address }), 'invalid_exact_evm_payload_recipient_mismatch'],
    [
      'an expired authorization',
      () => signed({ validBefore: 1_000n }),
      'invalid_exact_evm_payload_authorization_valid_before',
    ],
    [
      'an authorization not yet valid',
      () => signed({ validAfter: BigInt(Math.floor(Date.now() / 1000) + 3600) }),
      'invalid_exact_evm_payload_authorization_valid_after',
    ],
    [
      'a replayed nonce',
      async () => {
        const paid = await runtime.db.selectFrom('x402_authorizations').select('nonce').executeTakeFirstOrThrow();
        return await signed({ nonce: paid.nonce as Hex, validBefore: BigInt(Math.floor(Date.now() / 1000) + 90) });
      },
      'invalid_exact_evm_nonce_already_used',
    ],
    ['a payer without the funds', () => signed({}, poor, poor), 'insufficient_funds'],
  ])('refuses %s', async (_what, make, reason) => {
    const body = await make();
    const payer = body.paymentPayload.payload.authorization.from as Address;
    const before = await snapshot(payer);
    const answer = await settleAt(merchant.apiKey, body);
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({
      success: false,
      errorReason: reason,
      transaction: '',
      network: kind.network,
    });
    expect(await snapshot(payer)).toEqual(before);
  });

  it('answers a malformed body with the reason naming the field, never a 500', async () => {
    const good = await signed();
    const cases: Array<[unknown, string, RegExp]> = [
      [{}, 'invalid_payload', /paymentPayload, paymentRequirements/],
      [
        { ...good, paymentRequirements: { ...good.paymentRequirements, amount: '-1' } },
        'invalid_payment_requirements',
        /amount/,
      ],
      [
        { ...good, paymentPayload: { ...good.paymentPayload, payload: { signature: 'nope' } } },
        'invalid_payload',
        /signature/,
      ],
    ];
    const before = await snapshot();
    for (const [body, reason, names] of cases) {
      const answer = await settleAt(merchant.apiKey, body);
      expect(answer.statusCode).toBe(200);
      const json = answer.json() as SettleResponse;
      expect(json).toMatchObject({ success: false, errorReason: reason, transaction: '' });
      expect(json.errorMessage).toMatch(names);
    }
    expect(await snapshot()).toEqual(before);
  });
});

/** A payload of the exact scheme as @x402/evm's client builds it, with `change` applied to the authorization. */
async function signed(
  change: Partial<{ to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex }> = {},
  signer: PrivateKeyAccount = agent,
  from: PrivateKeyAccount = agent,
  price = 250_000n,
) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: from.address,
    to: kind.extra.payTo as Address,
    value: price,
    validAfter: now - 600n,
    validBefore: now + 90n,
    nonce: keccak256(toHex(`nonce ${Math.random()}`)),
    ...change,
  };
  const signature = await signer.signTypedData({
    domain: {
      name: kind.extra.name,
      version: kind.extra.version,
      chainId: chain.chainId,
      verifyingContract: chain.tokenAddress,
    },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const requirements = {
    scheme: 'exact',
    network: kind.network,
    amount: price.toString(),
    asset: kind.extra.asset,
    payTo: kind.extra.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: kind.extra.name, version: kind.extra.version },
  };
  const payload = {
    x402Version: 2,
    resource: { url: 'https://merchant.example/report' },
    accepted: requirements,
    payload: {
      signature,
      authorization: Object.fromEntries(
        Object.entries(authorization).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]),
      ),
    },
  };
  return { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
}

async function payment(id: string) {
  return await runtime.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('settleAuthorization for a checkout session (checkout-usdc calls it)', () => {
  it("pays the session's payment with an authorization for its locked gross, once; refuses another amount", async () => {
    const session = await createPayment(app, merchant.apiKey, { amount: 1580, currency: 'NGN' });
    const gross = (await payment(session.id)).gross_settlement_minor;
    const short = await signed({ value: gross - 1n }, agent, agent, gross - 1n);
    const refused = await settleAuthorization(runtime, {
      accountId: merchant.accountId,
      livemode: false,
      paymentId: session.id,
      payload: short.paymentPayload as PaymentPayload,
      requirements: short.paymentRequirements as PaymentRequirements,
    });
    expect(refused).toMatchObject({ status: 'refused', reason: 'invalid_exact_evm_payload_authorization_value' });
    expect((await payment(session.id)).status).toBe('pending');

    const body = await signed({}, agent, agent, gross);
    const input = {
      accountId: merchant.accountId,
      livemode: false,
      paymentId: session.id,
      payload: body.paymentPayload as PaymentPayload,
      requirements: body.paymentRequirements as PaymentRequirements,
    };
    const before = await snapshot();
    const outcome = await settleAuthorization(runtime, input);
    expect(outcome).toMatchObject({ status: 'settled', payer: agent.address, paymentId: session.id });
    await waitUntil('the session settled', async () => (await payment(session.id)).status === 'settled');
    expect((await snapshot()).treasury).toBe(before.treasury + gross);
    expect(await settleAuthorization(runtime, input)).toEqual(outcome);

    // Paid: a second authorization for the same session is refused before anything is recorded.
    const again = await signed({}, agent, agent, gross);
    const paidAlready = await settleAuthorization(runtime, {
      ...input,
      payload: again.paymentPayload as PaymentPayload,
      requirements: again.paymentRequirements as PaymentRequirements,
    });
    expect(paidAlready).toMatchObject({ status: 'refused', reason: 'invalid_transaction_state' });
    expect((await snapshot()).treasury).toBe(before.treasury + gross);
    await expectSettlementInvariants(runtime, chain);
  });
});
