import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { paySandbox } from '../src/payments/sandbox-rail.ts';
import { testAccount, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { firstKeyAuth } from '../test/support/money.ts';
import { createPayment } from './create-payment.ts';
import { getPayment } from './get-payment.ts';

const NOW = '2026-05-01T09:00:00.000Z';
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date(NOW)) });
});

async function merchant(): Promise<Actor> {
  const account = await testAccount(runtime);
  return { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'api' };
}

async function created(actor: Actor) {
  return executedOutput(
    await executeTool(
      createPayment,
      { amount: 15802.5, currency: 'NGN', redirect_url: 'https://shop.example/thanks', metadata: { order: 42 } },
      { runtime, actor },
    ),
  );
}

async function read(actor: Actor, input: unknown) {
  return executedOutput(await executeTool(getPayment, input, { runtime, actor }));
}

async function refusal(actor: Actor, input: unknown): Promise<AppError> {
  const error = await executeTool(getPayment, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('get_payment', () => {
  it('reads the payment as created, and its status and paid_at once the payer has paid', async () => {
    const actor = await merchant();
    const payment = await created(actor);
    expect(await read(actor, { payment_id: payment.id })).toEqual(payment);
    // 15,802.50 NGN at 1580.25 per USDC is 10 USDC gross: 0.1 fee, 9.9 to the merchant.
    expect(payment.quote).toMatchObject({ gross_settlement_amount: 10, fee_amount: 0.1, settlement_amount: 9.9 });

    runtime.clock.advance(60_000);
    await paySandbox(runtime, actor, payment.id, 'succeeded');
    expect(await read(actor, { payment_id: payment.id })).toEqual({
      ...payment,
      status: 'paid',
      paid_at: '2026-05-01T09:01:00.000Z',
      // Instant schedule: due as soon as it is paid.
      settlement_due_at: '2026-05-01T09:01:00.000Z',
    });
  });

  it('reads the same on the agent channel (logged), and records the read', async () => {
    const actor = await merchant();
    const payment = await created(actor);
    const onAgent = await executeTool(
      getPayment,
      { payment_id: payment.id },
      { runtime, actor: { ...actor, channel: 'agent' } },
    );
    expect(onAgent).toMatchObject({ kind: 'executed', decision: 'allow', output: payment });
    expect(onAgent.kind === 'executed' && onAgent.actionId).toMatch(/./);
  });

  it("an unknown id, another account's and the other mode's payment are all the same 404 naming payment_id", async () => {
    const actor = await merchant();
    const payment = await created(actor);
    const other = await merchant();
    for (const [who, id] of [
      [actor, 'pay_doesnotexist'],
      [other, payment.id],
      [{ ...actor, livemode: true }, payment.id],
    ] as const) {
      const error = await refusal(who, { payment_id: id });
      expect(error).toMatchObject({ code: 'not_found', param: 'payment_id' });
      expect(error.message).toBe(`No such payment: '${id}'.`);
    }
  });

  it('a missing, empty or over-long id, or an unknown field, is refused naming the field', async () => {
    const actor = await merchant();
    const cases: [unknown, string][] = [
      [{}, 'payment_id'],
      [{ payment_id: '' }, 'payment_id'],
      [{ payment_id: 'p'.repeat(101) }, 'payment_id'],
      [{ payment_id: 7 }, 'payment_id'],
      [{ payment_id: 'pay_x', expand: ['refunds'] }, 'expand'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
  });

  it('a key without payments:read is refused', async () => {
    const actor = await merchant();
    const payment = await created(actor);
    const error = await refusal({ ...actor, scopes: new Set(['payouts:write']) }, { payment_id: payment.id });
    expect(error.code).toBe('permission_denied');
  });
});
