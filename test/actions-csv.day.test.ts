import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import type { Runtime } from '../src/runtime.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, extraKey, testAccount, testApp } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C, editPolicy, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { MPESA_APP, operatorCollects, railsWorld } from './support/rails.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';

/**
 * Finance's day in the actions CSV (docs/dashboard.md, "Actions"): test funding, a payer's payment
 * and its settlement batch, a payout held and approved, a revenue share split in two; parsed with
 * a CSV library, every movement has its amount, each leg its own line, each settlement its hash
 * and recipient, each approved action its approver. And an M-Pesa payment reads in shillings.
 */

type Line = Record<string, string>;

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let stopWorker: () => Promise<void>;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  const worker = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  stopWorker = () => worker.stop();
});

afterAll(async () => {
  await stopWorker?.();
  await chain?.close();
});

async function csvOf(target: FastifyInstance, key: string): Promise<Line[]> {
  const res = await target.inject({ method: 'GET', url: '/agent/actions.csv?limit=500', headers: bearer(key) });
  expect(res.statusCode, res.body).toBe(200);
  return parse(res.body, { bom: true, columns: true });
}

describe('the actions CSV over a day', () => {
  it('has every amount, leg, hash and approver', async () => {
    const merchant = await testAccount(runtime);
    const approver = await extraKey(runtime, merchant.accountId, { scopes: ['approvals'] });
    const approverId = (
      await runtime.db
        .selectFrom('api_keys')
        .select('id')
        .where('account_id', '=', merchant.accountId)
        .where('last4', '=', approver.slice(-4))
        .executeTakeFirstOrThrow()
    ).id;

    // Morning: test funding, then a payer pays 25,000 NGN into an order settled to an address.
    await fund(app, merchant.apiKey, 5000);
    const payment = await createPayment(app, merchant.apiKey, {
      amount: 25_000,
      currency: 'NGN',
      reference: 'order-1001',
      payout_address: ADDRESS_C,
    });
    expect((await payPayment(app, merchant.apiKey, payment.id)).statusCode).toBe(200);

    // A payout above the confirmation threshold, approved by finance's key.
    const policy = await editPolicy(app, merchant.apiKey, (p) => {
      p.channels.api.confirm_above = '100';
    });
    expect(policy.statusCode).toBe(200);
    const held = await post(app, merchant.apiKey, '/v1/payouts', {
      amount: 250,
      asset: 'USDC',
      to_address: ADDRESS_A,
      reference: 'inv-42',
      memo: 'March invoice',
    });
    expect(held.statusCode, held.body).toBe(202);
    const approved = await post(app, approver, `/v1/confirmations/${held.json().confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);

    // A revenue share, 70/30.
    const split = await post(app, merchant.apiKey, '/v1/revenue_shares', {
      amount: 90,
      asset: 'USDC',
      reference: 'split-1',
      splits: [
        { to_address: ADDRESS_A, share_bps: 7000 },
        { to_address: ADDRESS_B, share_bps: 3000 },
      ],
    });
    expect(split.statusCode, split.body).toBe(200);

    await waitUntil('every transfer confirmed', async () => {
      const rows = await runtime.db
        .selectFrom('transfers')
        .select('status')
        .where('account_id', '=', merchant.accountId)
        .execute();
      return rows.length === 4 && rows.every((r) => r.status === 'confirmed');
    });

    const lines = await csvOf(app, merchant.apiKey);
    const of = (tool: string) => lines.filter((l) => l.tool === tool);

    // Test funding: its amount, from the test treasury.
    expect(of('fund_test_balance')).toEqual([
      expect.objectContaining({
        amount: '5000.000000',
        asset: 'USDC',
        counterparty: 'test treasury',
        status: 'executed',
      }),
    ]);

    // The payer's payment: its amount in its currency, its reference, the payer as counterparty.
    expect(of('record_payment_attempt')).toEqual([
      expect.objectContaining({
        amount: '25000.00',
        asset: 'NGN',
        payment_id: payment.id,
        reference: 'order-1001',
        counterparty: 'payer (sandbox)',
      }),
    ]);

    // The payout: amount, recipient, reference, approver, and its transaction.
    const payoutLines = of('create_payout');
    expect(payoutLines).toHaveLength(1);
    const payoutId = approved.json().result?.id ?? payoutLines[0]!.object_id;
    expect(payoutLines[0]).toMatchObject({
      amount: '250.000000',
      asset: 'USDC',
      recipient: ADDRESS_A,
      counterparty: ADDRESS_A,
      reference: 'inv-42',
      memo: 'March invoice',
      decision: 'require_confirmation',
      status: 'executed',
      approved_by_key: approverId,
      object_id: payoutId,
    });
    expect(payoutLines[0]!.decided_by).toMatch(/^sk_test_/);
    expect(Date.parse(payoutLines[0]!.decided_at!)).not.toBeNaN();
    expect(payoutLines[0]!.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);

    // The revenue share: one line per leg, in the merchant's order, each with its own amount,
    // recipient and transaction; together they make the total.
    const legs = of('split_revenue');
    expect(legs.map((l) => [l.leg, l.amount, l.recipient, l.reference])).toEqual([
      ['1 of 2', '63.000000', ADDRESS_A, 'split-1'],
      ['2 of 2', '27.000000', ADDRESS_B, 'split-1'],
    ]);
    for (const leg of legs) {
      expect(leg.leg_id).toMatch(/^po_/);
      expect(leg.object_id).toBe(split.json().id);
      expect(leg.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    }

    // Settlement batches: one line per transfer, each with its recipient, amount, batch and hash;
    // between them they carry the payment's settlement, the payout and both legs.
    const batchLines = of('confirm_settlement_batch');
    expect(batchLines.length).toBe(4);
    for (const line of batchLines) {
      expect(line.batch_id).not.toBe('');
      expect(line.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(line.recipient).toMatch(/^0x[0-9a-fA-F]{40}$/);
      expect(line.counterparty).toBe(line.recipient);
      expect(line.amount).toMatch(/^\d+\.\d{6}$/);
    }
    const byObject = new Map(batchLines.map((l) => [l.object_id, l]));
    expect(byObject.get(payment.id)).toMatchObject({ payment_id: payment.id, reference: 'order-1001' });
    expect(byObject.get(payment.id)!.recipient!.toLowerCase()).toBe(ADDRESS_C);
    expect(byObject.get(payoutId)).toMatchObject({ amount: '250.000000', reference: 'inv-42' });
    expect(byObject.get(payoutId)!.tx_hash).toBe(payoutLines[0]!.tx_hash);
    for (const leg of legs) {
      expect(byObject.get(leg.leg_id!)).toMatchObject({
        amount: leg.amount,
        tx_hash: leg.tx_hash,
        reference: 'split-1',
      });
    }

    // The settlement started: the payment's USDC to its address, as the batch later paid it.
    const started = of('start_payment_settlements');
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ payment_id: payment.id, amount: byObject.get(payment.id)!.amount });

    // No money line without an amount.
    for (const line of lines.filter((l) => l.status === 'executed' && l.tool !== 'expire_payments')) {
      expect(line.amount, `${line.tool} ${line.id}`).not.toBe('');
    }
  });

  it('reads an M-Pesa payment in shillings, as the callback says, with its receipt', async () => {
    const w = await railsWorld();
    await operatorCollects(w.runtime, 'mpesa', MPESA_APP);
    const payment = await createPayment(w.api, w.merchant.apiKey, { amount: 1, currency: 'KES', reference: 'chai-1' });
    const res = await w.checkout.inject({
      method: 'POST',
      url: `/pay/${payment.id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: w.checkoutUrl },
      payload: new URLSearchParams({ rail: 'mpesa', phone: '0712000001' }).toString(),
    });
    expect(res.statusCode).toBe(303);
    const push = await w.daraja.waitForPush('254712000001');
    await w.daraja.phone.accept(push.checkoutRequestId);
    // The callback says Amount 1 (shillings).
    expect(w.daraja.callbacks.at(-1)!.body).toMatch(/"Name":"Amount","Value":1(\.00)?\}/);

    const lines = await csvOf(w.api, w.merchant.apiKey);
    const paid = lines.filter((l) => l.tool === 'record_payment_attempt');
    expect(paid).toEqual([
      expect.objectContaining({
        amount: '1.00',
        asset: 'KES',
        payment_id: payment.id,
        reference: 'chai-1',
        provider_reference: w.daraja.pushes.get(push.checkoutRequestId)!.receipt,
        counterparty: 'payer (M-Pesa)',
      }),
    ]);
  });
});
