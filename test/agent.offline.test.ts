import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../src/chain/chain.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { verifyActionLog } from '../src/audit/action-log.ts';
import type { Runtime } from '../src/runtime.ts';
import { bearer, extraKey, testAccount, testApp, type TestAccount } from './support/harness.ts';
import { availableBalance, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let worker: SettlementWorker;
let merchant: TestAccount;

const SUPPLIER = '0x4444444444444444444444444444444444444444';

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  worker = startSettlementWorker(runtime);
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 20_000);
  // The supplier was paid before through the API, so the agent's payouts to it are not "first payouts".
  const first = await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: SUPPLIER });
  expect(first.statusCode).toBe(200);
  await waitUntil('the first payout to settle', () => payoutSettled(first.json().id));
});

afterAll(async () => {
  await worker?.stop();
  await chain?.close();
});

const settle = (body: Record<string, unknown>, key = merchant.apiKey) => post(app, key, '/agent/settle', body);

async function payoutSettled(id: string): Promise<boolean> {
  const res = await app.inject({ method: 'GET', url: `/v1/payouts/${id}`, headers: bearer(merchant.apiKey) });
  return res.json().status === 'settled';
}

describe('POST /agent/settle with the offline planner', () => {
  it('"pay out 20 USDC to 0x…" completes and the tokens arrive on the devnet', async () => {
    const before = await readTokenBalance(chain, SUPPLIER);
    const res = await settle({ instruction: `pay out 20 USDC to ${SUPPLIER}` });
    expect(res.statusCode, res.body).toBe(200);
    const run = res.json();
    expect(run).toMatchObject({ object: 'agent_run', status: 'completed', model: 'offline-planner/2', dry_run: false });
    expect(run.run_id).toMatch(/^run_/);
    expect(run.actions).toHaveLength(1);
    const [action] = run.actions;
    expect(action).toMatchObject({ tool: 'create_payout', status: 'executed', decision: { outcome: 'allow' } });
    expect(action.input).toEqual({ amount: 20, asset: 'USDC', to_address: SUPPLIER });
    await waitUntil('the payout to settle', () => payoutSettled(action.result.id));
    expect(await readTokenBalance(chain, SUPPLIER)).toBe(before + 20_000_000n);
    const payout = (
      await app.inject({ method: 'GET', url: `/v1/payouts/${action.result.id}`, headers: bearer(merchant.apiKey) })
    ).json();
    expect(payout.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('"pay out 5,000 USDC to 0x…" is held with an approve URL; a second key approves it and it lands', async () => {
    const before = await readTokenBalance(chain, SUPPLIER);
    const res = await settle({ instruction: `pay out 5,000 USDC to ${SUPPLIER}` });
    const run = res.json();
    expect(run.status).toBe('confirmation_required');
    expect(run.confirmations).toHaveLength(1);
    const [confirmation] = run.confirmations;
    expect(confirmation.approve_url).toBe(`http://localhost:3000/dashboard/confirmations/${confirmation.id}`);
    expect(run.reply).toContain(confirmation.approve_url);
    expect(run.actions[0]).toMatchObject({
      tool: 'create_payout',
      status: 'held',
      decision: { outcome: 'require_confirmation' },
    });

    const approver = await extraKey(runtime, merchant.accountId, { scopes: ['approvals'] });
    const approved = await post(app, approver, `/v1/confirmations/${confirmation.id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    await waitUntil('the approved payout to settle', () => payoutSettled(approved.json().result.id));
    expect(await readTokenBalance(chain, SUPPLIER)).toBe(before + 5_000_000_000n);

    // The run now shows the action executed and who approved it.
    const after = (
      await app.inject({ method: 'GET', url: `/agent/runs/${run.run_id}`, headers: bearer(merchant.apiKey) })
    ).json();
    expect(after.actions[0]).toMatchObject({ status: 'executed' });
    expect(after.actions[0].approved_by_key).toMatch(/^key_/);
  });

  it('the same idempotency_key twice runs once', async () => {
    const balance = await availableBalance(app, merchant.apiKey);
    const body = { instruction: `pay out 3 USDC to ${SUPPLIER}`, idempotency_key: `idem-${Date.now()}` };
    const [first, second] = await Promise.all([settle(body), settle(body)]);
    expect(first.json().run_id).toBe(second.json().run_id);
    expect(await availableBalance(app, merchant.apiKey)).toBe(balance - 3);
    const third = await settle(body);
    expect(third.json().run_id).toBe(first.json().run_id);
    expect(await availableBalance(app, merchant.apiKey)).toBe(balance - 3);
    const other = await settle({ ...body, instruction: `pay out 4 USDC to ${SUPPLIER}` });
    expect(other.statusCode).toBe(409);
  });

  it('a run left `running` by a process that stopped is closed as interrupted; its key then answers', async () => {
    const key = `idem-interrupted-${Date.now()}`;
    const instruction = `pay out 2 USDC to ${SUPPLIER}`;
    const keyRow = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .executeTakeFirstOrThrow();
    // What a killed process leaves behind: the run claimed its key, then nothing more.
    await runtime.db
      .insertInto('agent_runs')
      .values({
        id: `run_interrupted${Date.now()}`,
        account_id: merchant.accountId,
        livemode: false,
        channel: 'agent',
        key_id: keyRow.id,
        instruction,
        model: 'offline-planner/2',
        dry_run: false,
        idempotency_key: key,
        status: 'running',
        reply: '',
        created_at: new Date(runtime.clock.now().getTime() - runtime.config.agent.timeoutMs - 120_000),
      })
      .execute();
    const balance = await availableBalance(app, merchant.apiKey);
    const res = await settle({ instruction, idempotency_key: key });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'failed', reply: expect.stringMatching(/interrupted/) });
    // Not run again: nothing moved, and the same key keeps giving the same answer.
    expect(await availableBalance(app, merchant.apiKey)).toBe(balance);
    expect((await settle({ instruction, idempotency_key: key })).json().run_id).toBe(res.json().run_id);
    expect((await verifyActionLog(runtime.db)).ok).toBe(true);
  });

  it('dry_run plans and judges but moves nothing', async () => {
    const balance = await availableBalance(app, merchant.apiKey);
    const run = (await settle({ instruction: `pay out 7 USDC to ${SUPPLIER}`, dry_run: true })).json();
    expect(run.dry_run).toBe(true);
    expect(run.status).toBe('completed');
    expect(run.actions[0]).toMatchObject({ tool: 'create_payout', status: 'planned', decision: { outcome: 'allow' } });
    expect(await availableBalance(app, merchant.apiKey)).toBe(balance);
  });

  it('four 900 USDC payouts in one message are one 3,600 USDC decision: all held, none runs', async () => {
    const balance = await availableBalance(app, merchant.apiKey);
    const pairs = [1, 2, 3, 4].map((n) => `900 USDC to ${SUPPLIER} for invoice ${n}`).join(' and ');
    const run = (await settle({ instruction: `pay ${pairs}` })).json();
    expect(run.status).toBe('confirmation_required');
    expect(run.actions.map((a: { status: string }) => a.status)).toEqual(['held', 'held', 'held', 'held']);
    expect(run.actions[0].decision.reasons.map((r: { reason: string }) => r.reason).join(' ')).toMatch(/3,600/);
    expect(run.reply).toMatch(
      /Pay out 900\.000000 USDC to 0x4444444444444444444444444444444444444444 \(memo: invoice 1\): held for approval/,
    );
    expect(await availableBalance(app, merchant.apiKey)).toBe(balance);
  });

  it('a condition is never half-done: nothing runs, the reply names the words and the run waits for an answer', async () => {
    const run = (
      await settle({ instruction: `send 10 USDC to ${SUPPLIER} for goods but only after delivery is confirmed` })
    ).json();
    expect(run.status).toBe('needs_input');
    expect(run.actions).toEqual([]);
    expect(run.reply).toMatch(/"but", "only", "after"/);
  });

  it('refunds "only half" of a settled payment: the amount read from the payment passes grounding', async () => {
    const payment = await createPayment(app, merchant.apiKey, { amount: 10_000, currency: 'NGN' });
    expect((await payPayment(app, merchant.apiKey, payment.id)).statusCode).toBe(200);
    await waitUntil('the payment to settle', async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/v1/payments/${payment.id}`,
        headers: bearer(merchant.apiKey),
      });
      return res.json().status === 'settled';
    });
    const run = (
      await settle({ instruction: `refund ${payment.id} because the customer complained, but only half of it` })
    ).json();
    expect(run.status, run.reply).toBe('completed');
    expect(run.actions.map((a: { tool: string }) => a.tool)).toEqual(['get_payment', 'refund_payment']);
    expect(run.actions[1]).toMatchObject({
      status: 'executed',
      input: { payment_id: payment.id, amount: 5000, reason: 'the customer complained' },
    });
    expect(run.reply).toMatch(/Refund ₦5,000\.00 of pay_/);

    // The period read is the typed tool REST and MCP share; "since yesterday" spans a midnight.
    const revenue = (await settle({ instruction: 'how much did we take since yesterday?' })).json();
    expect(revenue.status, revenue.reply).toBe('completed');
    expect(revenue.actions.map((a: { tool: string }) => a.tool)).toEqual(['get_revenue']);
    expect(revenue.reply).toMatch(/₦10,000\.00 in 1 payment/);
  });

  it('an instruction it does not understand is asked back, lists what it can do, and does nothing', async () => {
    const run = (await settle({ instruction: 'send the usual amount to our supplier' })).json();
    expect(run.status).toBe('needs_input');
    expect(run.actions).toEqual([]);
    expect(run.reply).toMatch(/pay out/i);
  });

  it('needs the agent scope and a non-empty instruction', async () => {
    const noAgent = await extraKey(runtime, merchant.accountId, { scopes: ['payments:read'] });
    expect((await settle({ instruction: 'balance?' }, noAgent)).statusCode).toBe(403);
    const empty = await settle({ instruction: '   ' });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.param).toBe('instruction');
  });

  it('lists runs and actions, filters them, and exports CSV', async () => {
    const runs = (
      await app.inject({ method: 'GET', url: '/agent/runs?limit=2', headers: bearer(merchant.apiKey) })
    ).json();
    expect(runs.data).toHaveLength(2);
    const held = (
      await app.inject({
        method: 'GET',
        url: '/agent/actions?decision=require_confirmation',
        headers: bearer(merchant.apiKey),
      })
    ).json();
    expect(held.data.length).toBeGreaterThanOrEqual(1);
    expect(
      held.data.every((a: { decision: { outcome: string } }) => a.decision.outcome === 'require_confirmation'),
    ).toBe(true);
    // Pages continue where the last one ended, newest first, without repeats.
    const all = (
      await app.inject({ method: 'GET', url: '/agent/actions?limit=500', headers: bearer(merchant.apiKey) })
    ).json().data;
    const page1 = (
      await app.inject({ method: 'GET', url: '/agent/actions?limit=2', headers: bearer(merchant.apiKey) })
    ).json();
    expect(page1.has_more).toBe(true);
    const page2 = (
      await app.inject({
        method: 'GET',
        url: `/agent/actions?limit=2&starting_after=${page1.data[1].id}`,
        headers: bearer(merchant.apiKey),
      })
    ).json();
    expect([...page1.data, ...page2.data].map((a: { id: string }) => a.id)).toEqual(
      all.slice(0, 4).map((a: { id: string }) => a.id),
    );
    const runsPage2 = (
      await app.inject({
        method: 'GET',
        url: `/agent/runs?limit=1&starting_after=${runs.data[0].run_id}`,
        headers: bearer(merchant.apiKey),
      })
    ).json();
    expect(runsPage2.data[0].run_id).toBe(runs.data[1].run_id);
    // Another mode's ids are no cursor: the same 400 as an unknown id, nothing about them shown.
    const live = await extraKey(runtime, merchant.accountId, { livemode: true });
    for (const url of [
      `/agent/runs?starting_after=${runs.data[0].run_id}`,
      `/agent/actions?starting_after=${page1.data[1].id}`,
    ]) {
      const res = await app.inject({ method: 'GET', url, headers: bearer(live) });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'starting_after' });
    }
    const csv = await app.inject({
      method: 'GET',
      url: '/agent/actions.csv?tool=create_payout',
      headers: bearer(merchant.apiKey),
    });
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    // A byte order mark first, so that spreadsheets read it as UTF-8 (docs/agent.md).
    expect(csv.body.split('\r\n')[0]).toMatch(/^\uFEFFid,created,channel,key_id,requested_by,run_id/);
    expect(csv.body).toContain(held.data[0].id);
  });
});
