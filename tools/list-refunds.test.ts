import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import type { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { merchantActor, pageIds, settledPayment, toolRefusal } from '../test/support/tool-tests.ts';
import { listRefunds } from './list-refunds.ts';
import { refundPayment } from './refund-payment.ts';

// A fixed clock a minute apart per refund: creation order is list order.
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00Z')) });
});

const merchant = (): Promise<Actor> => merchantActor(runtime);

async function refund(actor: Actor, paymentId: string, amount: number) {
  runtime.clock.advance(60_000);
  return executedOutput(await executeTool(refundPayment, { payment_id: paymentId, amount }, { runtime, actor }));
}

async function list(actor: Actor, input: Record<string, unknown> = {}) {
  return executedOutput(await executeTool(listRefunds, input, { runtime, actor }));
}

const ids = pageIds;

const refusal = (actor: Actor, input: unknown): Promise<AppError> => toolRefusal(runtime, listRefunds, actor, input);

describe('list_refunds', () => {
  let actor: Actor;
  let p1: string;
  let p2: string;
  let r1: string; // p1, 10 USD
  let r2: string; // p2, 20 USD
  let r3: string; // p1, the other 90 USD: p1 is refunded in full

  beforeAll(async () => {
    actor = await merchant();
    p1 = await settledPayment(runtime, actor);
    p2 = await settledPayment(runtime, actor);
    r1 = (await refund(actor, p1, 10)).id;
    r2 = (await refund(actor, p2, 20)).id;
    r3 = (await refund(actor, p1, 90)).id;
    // Another merchant's refund never shows.
    const other = await merchant();
    await refund(other, await settledPayment(runtime, other), 5);
  });

  it("lists refunds newest first, each showing its payment's state now", async () => {
    const page = await list(actor);
    expect(page.object).toBe('list');
    expect(ids(page)).toEqual([r3, r2, r1]);
    expect(page.has_more).toBe(false);
    expect(page.data[2]).toEqual({
      id: r1,
      object: 'refund',
      livemode: false,
      payment_id: p1,
      status: 'succeeded',
      rail: 'sandbox',
      failure_reason: null,
      provider_status: null,
      action_required: null,
      amount: 10,
      currency: 'USD',
      reason: null,
      balance_debit: { asset: 'USDC', amount: 9.9 },
      fee_returned: { asset: 'USDC', amount: 0.1 },
      // Not as it was after this refund: p1 has since been refunded in full.
      payment_status: 'refunded',
      payment_amount_refunded: 100,
      created: '2026-05-01T09:01:00.000Z',
    });
    expect(page.data[1]).toMatchObject({ id: r2, payment_status: 'partially_refunded', payment_amount_refunded: 20 });
    expect((await list({ ...actor, livemode: true })).data).toEqual([]);
  });

  it('filters by payment, status and creation time; pages with starting_after and ending_before', async () => {
    expect(ids(await list(actor, { payment_id: p1 }))).toEqual([r3, r1]);
    expect(ids(await list(actor, { status: 'succeeded' }))).toEqual([r3, r2, r1]);
    expect(ids(await list(actor, { status: 'pending' }))).toEqual([]);
    expect(ids(await list(actor, { created_gte: '2026-05-01T09:02:00Z' }))).toEqual([r3, r2]);
    const first = await list(actor, { limit: 2 });
    expect([ids(first), first.has_more]).toEqual([[r3, r2], true]);
    expect(ids(await list(actor, { limit: 2, starting_after: r2 }))).toEqual([r1]);
    expect(ids(await list(actor, { ending_before: r1, limit: 1 }))).toEqual([r2]);
  });

  it("another account's payment is the same 404 as an unknown one; its refund id is no cursor", async () => {
    const other = await merchant();
    const error = await refusal(other, { payment_id: p1 });
    expect(error).toMatchObject({ code: 'not_found', param: 'payment_id' });
    expect(error.message).toBe(`No such payment: '${p1}'.`);
    expect(await refusal(actor, { payment_id: 'pay_unknown' })).toMatchObject({ code: 'not_found' });
    expect(await refusal(other, { starting_after: r1 })).toMatchObject({
      code: 'invalid_request',
      param: 'starting_after',
    });
  });

  it('refusals name the field; a key without payments:read is refused', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'refunded' }, 'status'],
      [{ limit: 101 }, 'limit'],
      [{ payment_id: 'p'.repeat(101) }, 'payment_id'],
      [{ created_lte: 'tomorrow' }, 'created_lte'],
      [{ currency: 'USD' }, 'currency'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
    expect((await refusal({ ...actor, scopes: new Set(['refunds:write']) }, {})).code).toBe('permission_denied');
  });
});
