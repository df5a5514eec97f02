import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../src/chain/chain.ts';
import type { Runtime } from '../src/runtime.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, testAccount, testApp, type TestAccount } from './support/harness.ts';
import { availableBalance, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { expectSettlementInvariants, settlementRuntime, waitUntil } from './support/settlement.ts';

/** Issue 6's acceptance on the devnet: payouts, refunds and revenue shares end to end, ledger = chain. */
let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let worker: SettlementWorker;
let merchant: TestAccount;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  worker = startSettlementWorker(runtime);
  merchant = await testAccount(runtime);
});

afterAll(async () => {
  await worker?.stop();
  await chain?.close();
});

const get = (url: string) => app.inject({ method: 'GET', url, headers: bearer(merchant.apiKey) });

async function settledPayment(amount: number): Promise<{ id: string; settlement: number }> {
  const created = await createPayment(app, merchant.apiKey, { amount, currency: 'NGN' });
  expect((await payPayment(app, merchant.apiKey, created.id)).statusCode).toBe(200);
  await waitUntil(
    'the payment to settle',
    async () => (await get(`/v1/payments/${created.id}`)).json().status === 'settled',
  );
  return { id: created.id, settlement: created.quote.settlement_amount };
}

describe('money movement on the devnet', () => {
  it('a payout of 100 USDC from a funded test balance settles; the recipient and the ledger agree', async () => {
    const to = '0x5555555555555555555555555555555555555555';
    await fund(app, merchant.apiKey, 1000);
    const res = await post(app, merchant.apiKey, '/v1/payouts', { amount: 100, to_address: to });
    expect(res.statusCode, res.body).toBe(200);
    await waitUntil(
      'the payout to settle',
      async () => (await get(`/v1/payouts/${res.json().id}`)).json().status === 'settled',
    );
    const payout = (await get(`/v1/payouts/${res.json().id}`)).json();
    expect(payout.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await readTokenBalance(chain, to)).toBe(100_000_000n);
    expect(await availableBalance(app, merchant.apiKey)).toBe(900);
    const events = (await get(`/v1/events?limit=50`))
      .json()
      .data.map((e: { type: string; data: { object?: { id?: string } } }) => [e.type, e.data.object?.id]);
    expect(events).toContainEqual(['payout.settled', payout.id]);
    await expectSettlementInvariants(runtime, chain);
  });

  it('refund half, then the other half, then one more: the third is refused; status and ledger right after each', async () => {
    const payment = await settledPayment(10_000);
    const balanceBefore = await availableBalance(app, merchant.apiKey);

    const first = await post(app, merchant.apiKey, `/v1/payments/${payment.id}/refunds`, { amount: 5000 });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({
      amount: 5000,
      currency: 'NGN',
      payment_status: 'partially_refunded',
      payment_amount_refunded: 5000,
    });
    expect((await get(`/v1/payments/${payment.id}`)).json()).toMatchObject({
      status: 'partially_refunded',
      amount_refunded: 5000,
    });
    await expectSettlementInvariants(runtime, chain);

    const second = await post(app, merchant.apiKey, `/v1/payments/${payment.id}/refunds`, {});
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toMatchObject({ amount: 5000, payment_status: 'refunded', payment_amount_refunded: 10_000 });
    expect((await get(`/v1/payments/${payment.id}`)).json().status).toBe('refunded');
    // Together the two refunds took back exactly what the payment credited, to the unit.
    const taken = Math.round((balanceBefore - (await availableBalance(app, merchant.apiKey))) * 1e6);
    expect(taken).toBe(Math.round(payment.settlement * 1e6));
    await expectSettlementInvariants(runtime, chain);

    const third = await post(app, merchant.apiKey, `/v1/payments/${payment.id}/refunds`, { amount: 1 });
    expect(third.statusCode).toBe(409);
    expect(third.json().error.message).toContain('fully refunded');
    const refunds = await runtime.db.selectFrom('refunds').select('id').where('payment_id', '=', payment.id).execute();
    expect(refunds).toHaveLength(2);
    const events = await runtime.db
      .selectFrom('events')
      .select('type')
      .where('object_id', '=', payment.id)
      .where('type', '=', 'payment.refunded')
      .execute();
    expect(events).toHaveLength(2);
    await expectSettlementInvariants(runtime, chain);
  });

  it('a 70/20/10 revenue share of a settled payment lands in three addresses in one transaction', async () => {
    const payment = await settledPayment(50_000);
    const recipients: `0x${string}`[] = [
      '0x6666666666666666666666666666666666666666',
      '0x7777777777777777777777777777777777777777',
      '0x8888888888888888888888888888888888888888',
    ];
    const res = await post(app, merchant.apiKey, '/v1/revenue_shares', {
      payment_id: payment.id,
      splits: [
        { to_address: recipients[0], share_bps: 7000 },
        { to_address: recipients[1], share_bps: 2000 },
        { to_address: recipients[2], share_bps: 1000 },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const legs = res.json().legs as Array<{ id: string; amount: number }>;
    await waitUntil('every leg to settle', async () => {
      const states = await Promise.all(legs.map(async (leg) => (await get(`/v1/payouts/${leg.id}`)).json().status));
      return states.every((s) => s === 'settled');
    });
    const settled = await Promise.all(legs.map(async (leg) => (await get(`/v1/payouts/${leg.id}`)).json()));
    expect(new Set(settled.map((p) => p.tx_hash)).size).toBe(1);
    const total = Math.round(payment.settlement * 1e6);
    const expected = [
      Math.floor((total * 7000) / 10000),
      Math.floor((total * 2000) / 10000),
      Math.floor((total * 1000) / 10000),
    ];
    // Leftover units go one each to the first legs (docs/api.md).
    for (let i = 0, left = total - expected.reduce((a, b) => a + b, 0); left > 0; i++, left--) expected[i]! += 1;
    for (const [i, address] of recipients.entries())
      expect(await readTokenBalance(chain, address)).toBe(BigInt(expected[i]!));
    const again = await post(app, merchant.apiKey, '/v1/revenue_shares', {
      payment_id: payment.id,
      splits: [{ to_address: recipients[0], share_bps: 10_000 }],
    });
    expect(again.statusCode).toBe(409);
    await expectSettlementInvariants(runtime, chain);
  });
});
