import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import type { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C } from '../test/support/money.ts';
import { merchantActor, pageIds, settledPayment, toolRefusal } from '../test/support/tool-tests.ts';
import { listRevenueShares } from './list-revenue-shares.ts';
import { splitRevenue } from './split-revenue.ts';

// A fixed clock a minute apart per share: creation order is list order. Shares need a funded test
// balance and the embedded devnet the runtime starts on first use.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00Z')) });
  app = await testApp(runtime);
});

const merchant = (): Promise<Actor> => merchantActor(runtime, { app, funds: 100 });

async function list(actor: Actor, input: Record<string, unknown> = {}) {
  return executedOutput(await executeTool(listRevenueShares, input, { runtime, actor }));
}

const ids = pageIds;

const refusal = (actor: Actor, input: unknown): Promise<AppError> =>
  toolRefusal(runtime, listRevenueShares, actor, input);

describe('list_revenue_shares', () => {
  let actor: Actor;
  let paymentId: string;
  type Share = Awaited<ReturnType<typeof list>>['data'][number];
  let byAmount: Share; // 09:01, reference q1
  let byPayment: Share; // 09:02

  beforeAll(async () => {
    actor = await merchant();
    paymentId = await settledPayment(runtime, actor);
    const split = async (input: Record<string, unknown>) => {
      runtime.clock.advance(60_000);
      return executedOutput(await executeTool(splitRevenue, input, { runtime, actor }));
    };
    byAmount = await split({
      amount: 10,
      reference: 'q1',
      splits: [
        { to_address: ADDRESS_A, share_bps: 2500 },
        { to_address: ADDRESS_B, share_bps: 2500 },
        { to_address: ADDRESS_C, share_bps: 5000 },
      ],
    });
    byPayment = await split({ payment_id: paymentId, splits: [{ to_address: ADDRESS_C, share_bps: 10_000 }] });
    // Another merchant's share never shows.
    const other = await merchant();
    await executeTool(
      splitRevenue,
      { amount: 1, reference: 'q1', splits: [{ to_address: ADDRESS_A, share_bps: 10_000 }] },
      { runtime, actor: other },
    );
  });

  it('lists shares newest first, each with all its legs as split_revenue returned it', async () => {
    const page = await list(actor);
    expect(page.object).toBe('list');
    // Each share exactly as split_revenue returned it, its legs in the order its splits were given.
    expect(page.data).toEqual([byPayment, byAmount]);
    expect(page.has_more).toBe(false);
    expect(byAmount.legs.map((l) => [l.to_address, l.amount])).toEqual([
      [ADDRESS_A, 2.5],
      [ADDRESS_B, 2.5],
      [ADDRESS_C, 5],
    ]);
    expect(byPayment).toMatchObject({ payment_id: paymentId, amount: 99, legs: [{ amount: 99 }] });
    expect((await list({ ...actor, livemode: true })).data).toEqual([]);
  });

  it('filters by payment, reference and creation time; pages with limit and starting_after', async () => {
    expect(ids(await list(actor, { payment_id: paymentId }))).toEqual([byPayment.id]);
    expect(ids(await list(actor, { reference: 'q1' }))).toEqual([byAmount.id]);
    expect(ids(await list(actor, { created_lte: '2026-05-01T09:01:30Z' }))).toEqual([byAmount.id]);
    const first = await list(actor, { limit: 1 });
    expect([ids(first), first.has_more]).toEqual([[byPayment.id], true]);
    const next = await list(actor, { limit: 1, starting_after: byPayment.id });
    expect([ids(next), next.has_more]).toEqual([[byAmount.id], false]);
  });

  it("another account's payment is the same 404 as an unknown one; its share id is no cursor", async () => {
    const other = await merchant();
    const error = await refusal(other, { payment_id: paymentId });
    expect(error).toMatchObject({ code: 'not_found', param: 'payment_id' });
    expect(error.message).toBe(`No such payment: '${paymentId}'.`);
    expect(await refusal(other, { starting_after: byAmount.id })).toMatchObject({
      code: 'invalid_request',
      param: 'starting_after',
    });
  });

  it('refusals name the field; a key without payments:read is refused', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ limit: 0 }, 'limit'],
      [{ reference: 'r'.repeat(65) }, 'reference'],
      [{ payment_id: 'p'.repeat(101) }, 'payment_id'],
      [{ created_gte: '2026-13-01' }, 'created_gte'],
      [{ starting_after: 'split_unknown' }, 'starting_after'],
      [{ to_address: ADDRESS_A }, 'to_address'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
    expect((await refusal({ ...actor, scopes: new Set(['payouts:write']) }, {})).code).toBe('permission_denied');
  });
});
