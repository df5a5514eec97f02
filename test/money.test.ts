import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { approveConfirmation } from '../src/pipeline/approvals.ts';
import { TOOLS } from '../tools/registry.ts';
import { createPayment as createPaymentTool } from '../tools/create-payment.ts';
import { createPayout } from '../tools/create-payout.ts';
import { getBalance } from '../tools/get-balance.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import {
  ADDRESS_A,
  editPolicy,
  ADDRESS_B,
  ADDRESS_C,
  availableBalance,
  expectLedgerBalanced,
  firstKeyAuth,
  fund,
  post,
} from './support/money.ts';

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
});

afterAll(async () => {
  await chain.close();
});

/** The account's first key, acting on the agent channel. */
async function agentActor(accountId: string): Promise<Actor> {
  return { ...(await firstKeyAuth(runtime, accountId)), channel: 'agent' };
}

describe('balance and payouts', () => {
  it('funding shows in the balance; a payout takes it out at once and is queued', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    expect(await availableBalance(app, m.apiKey)).toBe(1000);
    const res = await post(app, m.apiKey, '/v1/payouts', {
      amount: 100,
      asset: 'USDC',
      to_address: ADDRESS_A,
      reference: 'inv-1',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      object: 'payout',
      status: 'queued',
      amount: 100,
      to_address: ADDRESS_A,
      reference: 'inv-1',
    });
    expect(await availableBalance(app, m.apiKey)).toBe(900);
    const balance = (await app.inject({ method: 'GET', url: '/v1/balance', headers: bearer(m.apiKey) })).json();
    expect(balance.pending_payouts[0].amount).toBe(100);
    const read = await app.inject({ method: 'GET', url: `/v1/payouts/${res.json().id}`, headers: bearer(m.apiKey) });
    expect(read.json().id).toBe(res.json().id);
    await expectLedgerBalanced(runtime);
  });

  it('a payout beyond the balance is 402 insufficient_funds and moves nothing', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 50);
    const res = await post(app, m.apiKey, '/v1/payouts', { amount: 50.000001, to_address: ADDRESS_A });
    expect(res.statusCode).toBe(402);
    expect(res.json().error.type).toBe('insufficient_funds');
    expect(await availableBalance(app, m.apiKey)).toBe(50);
    const payouts = await runtime.db.selectFrom('payouts').select('id').where('account_id', '=', m.accountId).execute();
    expect(payouts).toHaveLength(0);
  });

  it('20 concurrent payouts that together exceed the balance: the ones that fit run, the rest are refused', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(app, m.apiKey, '/v1/payouts', { amount: 150, to_address: ADDRESS_B, reference: `c-${i}` }),
      ),
    );
    const ok = responses.filter((r) => r.statusCode === 200);
    const refused = responses.filter((r) => r.statusCode === 402);
    expect(ok).toHaveLength(6);
    expect(refused).toHaveLength(14);
    expect(refused.every((r) => r.json().error.type === 'insufficient_funds')).toBe(true);
    expect(await availableBalance(app, m.apiKey)).toBe(100);
    await expectLedgerBalanced(runtime);
  });

  it('refuses a payout to the token or batch contract, naming to_address', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10);
    const res = await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: chain.tokenAddress });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.param).toBe('to_address');
  });

  it('validates the payout input naming each field', async () => {
    const m = await testAccount(runtime);
    for (const [body, param] of [
      [{ amount: 1, to_address: '0x12' }, 'to_address'],
      [{ amount: 1.1234567, to_address: ADDRESS_A }, 'amount'],
      [{ amount: 1, asset: 'ETH', to_address: ADDRESS_A }, 'asset'],
      [{ to_address: ADDRESS_A }, 'amount'],
    ] as const) {
      const res = await post(app, m.apiKey, '/v1/payouts', body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.param).toBe(param);
    }
  });
});

describe('revenue shares', () => {
  it('a share set summing to 9,999 is refused', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 100);
    const res = await post(app, m.apiKey, '/v1/revenue_shares', {
      amount: 100,
      splits: [
        { to_address: ADDRESS_A, share_bps: 7000 },
        { to_address: ADDRESS_B, share_bps: 2000 },
        { to_address: ADDRESS_C, share_bps: 999 },
      ],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.param).toBe('splits');
    expect(res.json().error.message).toContain('9999');
    expect(await availableBalance(app, m.apiKey)).toBe(100);
  });

  it('creates every leg atomically, exact to the unit', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 100);
    const res = await post(app, m.apiKey, '/v1/revenue_shares', {
      amount: 0.000011,
      splits: [
        { to_address: ADDRESS_A, share_bps: 7000 },
        { to_address: ADDRESS_B, share_bps: 2000 },
        { to_address: ADDRESS_C, share_bps: 1000 },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const legs = res.json().legs.map((l: { amount: number }) => Math.round(l.amount * 1e6));
    expect(legs.reduce((a: number, b: number) => a + b, 0)).toBe(11);
    expect(legs).toEqual([8, 2, 1]);
  });
});

describe('policy on the agent channel, and confirmations', () => {
  it('500 to a known recipient runs; 5,000 is held; only another approvals key can approve, once', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    // Make ADDRESS_C a known recipient through the api channel (no confirmation there).
    expect((await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_C })).statusCode).toBe(200);
    const actor = await agentActor(m.accountId);

    const small = await executeTool(createPayout, { amount: 500, to_address: ADDRESS_C }, { runtime, actor });
    expect(small.kind).toBe('executed');

    const large = await executeTool(createPayout, { amount: 5000, to_address: ADDRESS_C }, { runtime, actor });
    expect(large.kind).toBe('confirmation_required');
    if (large.kind !== 'confirmation_required') return;
    const { confirmation_id, approve_url, reasons } = large.confirmation;
    expect(approve_url).toContain(confirmation_id);
    expect(reasons.some((r) => r.rule === 'confirm_above')).toBe(true);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1 - 500);

    // The key that asked cannot approve.
    const same = await post(app, m.apiKey, `/v1/confirmations/${confirmation_id}/approve`);
    expect(same.statusCode).toBe(403);
    // A key without the approvals scope cannot either.
    const noScope = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    expect((await post(app, noScope, `/v1/confirmations/${confirmation_id}/approve`)).statusCode).toBe(403);

    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals', 'payments:read'] });
    const approved = await post(app, approver, `/v1/confirmations/${confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json().confirmation.status).toBe('executed');
    expect(approved.json().result).toMatchObject({ object: 'payout', amount: 5000 });
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1 - 500 - 5000);

    const again = await post(app, approver, `/v1/confirmations/${confirmation_id}/approve`);
    expect(again.statusCode).toBe(409);
    const payouts = await runtime.db
      .selectFrom('payouts')
      .select('id')
      .where('account_id', '=', m.accountId)
      .where('amount_minor', '=', 5_000_000_000n)
      .execute();
    expect(payouts).toHaveLength(1);
    await expectLedgerBalanced(runtime);
  });

  it('two approvals racing run the action once', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const actor = await agentActor(m.accountId);
    const held = await executeTool(createPayout, { amount: 2000, to_address: ADDRESS_A }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error('expected a hold');
    const approverKey = await issueApiKey(runtime.db, {
      accountId: m.accountId,
      livemode: false,
      scopes: ['approvals'],
    });
    const approver = { accountId: m.accountId, livemode: false, keyId: approverKey.id, scopes: new Set(['approvals']) };
    const results = await Promise.allSettled([
      approveConfirmation(runtime, TOOLS, approver, held.confirmation.confirmation_id),
      approveConfirmation(runtime, TOOLS, approver, held.confirmation.confirmation_id),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(8000);
  });

  it('an expired confirmation cannot be approved', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const actor = await agentActor(m.accountId);
    const held = await executeTool(createPayout, { amount: 3000, to_address: ADDRESS_A }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error('expected a hold');
    runtime.clock.advance(16 * 60_000);
    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const res = await post(app, approver, `/v1/confirmations/${held.confirmation.confirmation_id}/approve`);
    expect(res.statusCode).toBe(409);
    expect(res.json().error.message).toContain('expired');
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
  });

  it('a rejected action never runs', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const actor = await agentActor(m.accountId);
    const held = await executeTool(createPayout, { amount: 3000, to_address: ADDRESS_A }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error('expected a hold');
    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const rejected = await post(app, approver, `/v1/confirmations/${held.confirmation.confirmation_id}/reject`);
    expect(rejected.json().status).toBe('rejected');
    expect(
      (await post(app, approver, `/v1/confirmations/${held.confirmation.confirmation_id}/approve`)).statusCode,
    ).toBe(409);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
  });

  it('denies above 50,000 on the agent channel with the reason', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 60_000);
    const actor = await agentActor(m.accountId);
    await expect(
      executeTool(createPayout, { amount: 50_001, to_address: ADDRESS_A }, { runtime, actor }),
    ).rejects.toMatchObject({
      code: 'policy_denied',
    });
    expect(await availableBalance(app, m.apiKey)).toBe(60_000);
    // The merchant's calls; funding the test balance is the service's own step (channel system).
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .selectAll()
      .where('account_id', '=', m.accountId)
      .where('channel', '<>', 'system')
      .execute();
    expect(actions.map((a) => a.status)).toEqual(['denied']);
  });

  it('GET and PUT /v1/policy: a stricter api policy holds REST payouts with a 202', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    const current = (await app.inject({ method: 'GET', url: '/v1/policy', headers: bearer(m.apiKey) })).json();
    expect(current.version).toBe(0);
    const policy = current.policy;
    policy.channels.api.confirm_above = '10';
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/policy',
      headers: { ...bearer(m.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify(policy),
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().version).toBe(1);
    const held = await post(app, m.apiKey, '/v1/payouts', { amount: 11, to_address: ADDRESS_A });
    expect(held.statusCode).toBe(202);
    expect(held.json()).toMatchObject({
      object: 'confirmation_required',
      status: 'confirmation_required',
      tool: 'create_payout',
    });
    expect(await availableBalance(app, m.apiKey)).toBe(1000);
    const pending = (await app.inject({ method: 'GET', url: '/v1/confirmations', headers: bearer(m.apiKey) })).json();
    expect(pending.data.map((c: { id: string }) => c.id)).toEqual([held.json().confirmation_id]);
  });

  it('the recipient lists judge a payment an agent creates with a payout_address: a denylisted one is refused', async () => {
    const m = await testAccount(runtime);
    const put = await editPolicy(app, m.apiKey, (policy) => {
      policy.recipients.denylist = [ADDRESS_B];
    });
    expect(put.statusCode, put.body).toBe(200);
    const actor = await agentActor(m.accountId);
    const payment = { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/done' };
    await expect(
      executeTool(createPaymentTool, { ...payment, payout_address: ADDRESS_B }, { runtime, actor }),
    ).rejects.toMatchObject({ code: 'policy_denied' });
    const payments = () =>
      runtime.db.selectFrom('payments').select('id').where('account_id', '=', m.accountId).execute();
    expect(await payments()).toHaveLength(0);
    // Another address, or none, is created as usual.
    const ok = await executeTool(createPaymentTool, { ...payment, payout_address: ADDRESS_A }, { runtime, actor });
    expect(ok.kind).toBe('executed');
    expect((await executeTool(createPaymentTool, payment, { runtime, actor })).kind).toBe('executed');
    expect(await payments()).toHaveLength(2);
  });

  it('each mode has its own policy: what a test key sets does not govern live money', async () => {
    const m = await testAccount(runtime);
    const live = await extraKey(runtime, m.accountId, { livemode: true });
    const put = await editPolicy(app, m.apiKey, (policy) => {
      policy.tools.disabled = ['get_balance'];
    });
    expect(put.statusCode, put.body).toBe(200);
    const livePolicy = (await app.inject({ method: 'GET', url: '/v1/policy', headers: bearer(live) })).json();
    expect(livePolicy.version).toBe(0);
    expect(livePolicy.policy.tools.disabled).toEqual([]);

    const testActor = await agentActor(m.accountId);
    await expect(executeTool(getBalance, {}, { runtime, actor: testActor })).rejects.toMatchObject({
      code: 'policy_denied',
    });
    const liveActor = { ...testActor, livemode: true };
    expect((await executeTool(getBalance, {}, { runtime, actor: liveActor })).kind).toBe('executed');
  });

  it('a bad policy is refused naming the field', async () => {
    const m = await testAccount(runtime);
    const put = await editPolicy(app, m.apiKey, (policy) => {
      policy.channels.agent.daily_cap = 'lots';
    });
    expect(put.statusCode).toBe(400);
    expect(put.json().error.param).toBe('channels.agent.daily_cap');
  });
});
