import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { paySandbox } from '../src/payments/sandbox-rail.ts';
import { DEFAULT_POLICY, PolicySchema, policyToJson } from '../src/policy/policy-schema.ts';
import { savePolicy } from '../src/policy/store.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { testAccount, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { expectLedgerBalanced, firstKeyAuth } from '../test/support/money.ts';
import { createPayment } from './create-payment.ts';
import { getBalance } from './get-balance.ts';
import { getPayment } from './get-payment.ts';
import { refundPayment } from './refund-payment.ts';

// Payments in USD: 1 USD is 1 USDC at the sandbox rate, so a 100 USD payment credits 99 USDC (1% fee)
// and every share of a refund is a round number.
const NOW = '2026-05-01T09:00:00.000Z';
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date(NOW)) });
});

async function merchant(channel: Actor['channel'] = 'api'): Promise<Actor> {
  const account = await testAccount(runtime);
  return { ...(await firstKeyAuth(runtime, account.accountId)), channel };
}

async function pending(actor: Actor, amount = 100): Promise<string> {
  const payment = executedOutput(
    await executeTool(
      createPayment,
      { amount, currency: 'USD', redirect_url: 'https://shop.example/thanks' },
      { runtime, actor },
    ),
  );
  return payment.id;
}

/** The settlement worker's intake: every paid payment without an address settles into its balance. */
async function settleAll(): Promise<void> {
  while ((await settlePaidPayments(runtime, { chunk: 50, testModeOnChain: async () => false })) > 0);
}

/** A payment paid by the payer and settled into the merchant's custodial balance. */
async function settled(actor: Actor, amount = 100): Promise<string> {
  const id = await pending(actor, amount);
  await paySandbox(runtime, actor, id, 'succeeded');
  await settleAll();
  return id;
}

async function available(actor: Actor): Promise<number> {
  return executedOutput(await executeTool(getBalance, {}, { runtime, actor })).available[0]!.amount;
}

async function refusal(actor: Actor, input: unknown, idempotencyKey?: string): Promise<AppError> {
  const error = await executeTool(refundPayment, input, { runtime, actor, idempotencyKey }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

async function refundsOf(paymentId: string) {
  return runtime.db.selectFrom('refunds').selectAll().where('payment_id', '=', paymentId).execute();
}

describe('refund_payment', () => {
  it('a part, then the rest: the balance gives back its share at the locked rate, the fee its share', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    expect(await available(actor)).toBe(99);

    const part = await executeTool(
      refundPayment,
      { payment_id: id, amount: 25, reason: 'one mug broke' },
      { runtime, actor },
    );
    expect(part).toMatchObject({ kind: 'executed', decision: 'allow', replayed: false });
    const first = executedOutput(part);
    expect(first).toEqual({
      id: expect.stringMatching(/^rf_/),
      object: 'refund',
      livemode: false,
      payment_id: id,
      // The sandbox rail pays a refund back at once.
      status: 'succeeded',
      rail: 'sandbox',
      failure_reason: null,
      provider_status: null,
      action_required: null,
      amount: 25,
      currency: 'USD',
      reason: 'one mug broke',
      balance_debit: { asset: 'USDC', amount: 24.75 },
      fee_returned: { asset: 'USDC', amount: 0.25 },
      payment_status: 'partially_refunded',
      payment_amount_refunded: 25,
      created: NOW,
    });
    expect(await available(actor)).toBe(74.25);

    // Without an amount: everything not yet refunded.
    const rest = executedOutput(await executeTool(refundPayment, { payment_id: id }, { runtime, actor }));
    expect(rest).toMatchObject({
      amount: 75,
      reason: null,
      balance_debit: { asset: 'USDC', amount: 74.25 },
      fee_returned: { asset: 'USDC', amount: 0.75 },
      payment_status: 'refunded',
      payment_amount_refunded: 100,
    });
    expect(await available(actor)).toBe(0);
    const payment = executedOutput(await executeTool(getPayment, { payment_id: id }, { runtime, actor }));
    expect(payment).toMatchObject({ status: 'refunded', amount_refunded: 100 });

    // Nothing left: a conflict naming the payment.
    const error = await refusal(actor, { payment_id: id });
    expect(error).toMatchObject({ code: 'conflict', param: 'payment_id' });
    expect(error.message).toContain('already fully refunded');

    // Announced, and logged as an executed money action.
    const events = await runtime.db
      .selectFrom('events')
      .select('type')
      .where('object_id', '=', id)
      .where('type', '=', 'payment.refunded')
      .execute();
    expect(events).toHaveLength(2);
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .select(['tool', 'status'])
      .where('account_id', '=', actor.accountId)
      .where('tool', '=', 'refund_payment')
      .execute();
    // Two refunds ran; the third attempt failed and moved nothing (one clock instant: order unknown).
    expect(actions.map((a) => a.status).sort()).toEqual(['executed', 'executed', 'failed']);
    await expectLedgerBalanced(runtime);
  });

  it('an amount above what remains, or with too many decimals, is refused naming amount; nothing moves', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    await executeTool(refundPayment, { payment_id: id, amount: 60 }, { runtime, actor });
    const above = await refusal(actor, { payment_id: id, amount: 40.01 });
    expect(above).toMatchObject({ code: 'invalid_request', param: 'amount' });
    expect(above.message).toContain(`at most $40.00, what remains refundable on ${id}`);
    const decimals = await refusal(actor, { payment_id: id, amount: 1.001 });
    expect(decimals).toMatchObject({ code: 'invalid_request', param: 'amount' });
    expect(decimals.message).toContain('at most 2 decimal places for USD');
    expect(await refundsOf(id)).toHaveLength(1);
    // 60 of 100 USD took 59.40 of the 99 USDC credited.
    expect(await available(actor)).toBe(39.6);
  });

  it('input refusals name the field', async () => {
    const actor = await merchant();
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'payment_id'],
      [{ payment_id: '' }, 'payment_id'],
      [{ payment_id: 'pay_x', amount: 0 }, 'amount'],
      [{ payment_id: 'pay_x', amount: -5 }, 'amount'],
      [{ payment_id: 'pay_x', amount: '5' }, 'amount'],
      [{ payment_id: 'pay_x', reason: 'r'.repeat(301) }, 'reason'],
      [{ payment_id: 'pay_x', currency: 'USD' }, 'currency'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
  });

  it('only a settled payment can be refunded: pending and paid are conflicts naming payment_id', async () => {
    const actor = await merchant();
    const unpaid = await pending(actor);
    const unpaidError = await refusal(actor, { payment_id: unpaid });
    expect(unpaidError).toMatchObject({ code: 'conflict', param: 'payment_id' });
    expect(unpaidError.message).toContain('is pending: only a settled payment can be refunded');

    const paid = await pending(actor);
    await paySandbox(runtime, actor, paid, 'succeeded');
    const paidError = await refusal(actor, { payment_id: paid });
    expect(paidError).toMatchObject({ code: 'conflict', param: 'payment_id' });
    expect(paidError.message).toContain('not settled yet');
    await settleAll();
  });

  it("another account's payment, the other mode's and an unknown id are the same 404", async () => {
    const owner = await merchant();
    const id = await settled(owner);
    const other = await merchant();
    for (const [who, paymentId] of [
      [other, id],
      [{ ...owner, livemode: true }, id],
      [owner, 'pay_unknown'],
    ] as const) {
      const error = await refusal(who, { payment_id: paymentId });
      expect(error).toMatchObject({ code: 'not_found', param: 'payment_id' });
    }
    expect(await refundsOf(id)).toEqual([]);
    expect(await available(owner)).toBe(99);
  });

  it('a key without refunds:write is refused', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    const error = await refusal({ ...actor, scopes: new Set(['payments:read', 'payments:write']) }, { payment_id: id });
    expect(error.code).toBe('permission_denied');
    expect(await refundsOf(id)).toEqual([]);
  });

  it('the same Idempotency-Key replays the refund once; other parameters are idempotency_conflict', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    const input = { payment_id: id, amount: 10 };
    const first = await executeTool(refundPayment, input, { runtime, actor, idempotencyKey: 'refund-1' });
    const again = await executeTool(refundPayment, input, { runtime, actor, idempotencyKey: 'refund-1' });
    expect(again).toMatchObject({ kind: 'executed', replayed: true });
    expect(executedOutput(again)).toEqual(executedOutput(first));
    const error = await refusal(actor, { payment_id: id, amount: 11 }, 'refund-1');
    expect(error.code).toBe('idempotency_conflict');
    expect(await refundsOf(id)).toHaveLength(1);
    expect(await available(actor)).toBe(89.1);
  });
});

describe('refund_payment policy: judged at its USDC value (balance share + fee share)', () => {
  async function apiLimits(actor: Actor, limits: { confirm_above?: string; deny_above?: string }): Promise<void> {
    const policy = policyToJson(DEFAULT_POLICY);
    Object.assign(policy.channels.api, limits);
    await savePolicy(runtime.db, actor, PolicySchema.parse(policy), null, runtime.clock.now());
  }

  it('above deny_above it is policy_denied with the reason, and nothing moves', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    await apiLimits(actor, { deny_above: '24.99' });
    const error = await refusal(actor, { payment_id: id, amount: 25 });
    expect(error.code).toBe('policy_denied');
    expect(error.message).toContain('25 USDC');
    expect(await refundsOf(id)).toEqual([]);
    expect(await available(actor)).toBe(99);
    // At the limit (24.75 + 0.25 = 25 USDC is not above 25) it runs.
    await apiLimits(actor, { deny_above: '25' });
    expect((await executeTool(refundPayment, { payment_id: id, amount: 25 }, { runtime, actor })).kind).toBe(
      'executed',
    );
  });

  it('above confirm_above it is held for a person: a confirmation, and nothing moves yet', async () => {
    const actor = await merchant();
    const id = await settled(actor);
    await apiLimits(actor, { confirm_above: '10' });
    const held = await executeTool(refundPayment, { payment_id: id, amount: 20 }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${held.kind}`);
    expect(held.confirmation).toMatchObject({
      status: 'confirmation_required',
      confirmation_id: expect.stringMatching(/^conf_/),
      summary: `Refund $20.00 of ${id} to the payer`,
    });
    expect(held.confirmation.reasons.map((r) => r.rule)).toContain('confirm_above');
    expect(await refundsOf(id)).toEqual([]);
    expect(await available(actor)).toBe(99);
  });
});
