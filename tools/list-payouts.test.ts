import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import type { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C } from '../test/support/money.ts';
import { merchantActor, pageIds, toolRefusal } from '../test/support/tool-tests.ts';
import { createPayout } from './create-payout.ts';
import { getPayout } from './get-payout.ts';
import { listPayouts } from './list-payouts.ts';
import { splitRevenue } from './split-revenue.ts';

// A fixed clock a minute apart per call: creation order is list order. Payouts need a funded test
// balance and the embedded devnet the runtime starts on first use.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00Z')) });
  app = await testApp(runtime);
});

const merchant = (): Promise<Actor> => merchantActor(runtime, { app, funds: 1000 });

async function list(actor: Actor, input: Record<string, unknown> = {}) {
  return executedOutput(await executeTool(listPayouts, input, { runtime, actor }));
}

const ids = pageIds;

const refusal = (actor: Actor, input: unknown): Promise<AppError> => toolRefusal(runtime, listPayouts, actor, input);

describe('list_payouts', () => {
  let actor: Actor;
  let a: string; // 09:01, reference rent
  let b: string; // 09:02, settled
  let shareId: string; // 09:03, two legs
  let legs: string[];

  beforeAll(async () => {
    actor = await merchant();
    const payout = async (input: Record<string, unknown>) => {
      runtime.clock.advance(60_000);
      return executedOutput(await executeTool(createPayout, input, { runtime, actor })).id;
    };
    a = await payout({ amount: 10, to_address: ADDRESS_A, reference: 'rent' });
    b = await payout({ amount: 20, to_address: ADDRESS_B });
    runtime.clock.advance(60_000);
    const share = executedOutput(
      await executeTool(
        splitRevenue,
        {
          amount: 30,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: ADDRESS_C, share_bps: 5000 },
          ],
        },
        { runtime, actor },
      ),
    );
    shareId = share.id;
    legs = share.legs.map((leg) => leg.id);
    // What the settlement worker writes once b's batch is confirmed (tested in test/settlement*).
    await runtime.db
      .updateTable('payouts')
      .set({ status: 'settled', tx_hash: `0x${'cd'.repeat(32)}`, chain_id: 31337, settled_at: runtime.clock.now() })
      .where('id', '=', b)
      .execute();
    // Another merchant's payout never shows.
    const other = await merchant();
    await executeTool(createPayout, { amount: 1, to_address: ADDRESS_A, reference: 'rent' }, { runtime, actor: other });
  });

  it('lists payouts and revenue-share legs newest first, each as get_payout reads it', async () => {
    const page = await list(actor);
    expect(page.object).toBe('list');
    // Each leg is made a millisecond after the one before (split_revenue keeps the order it was
    // given), so newest first lists the legs in the reverse of the split's order.
    expect(ids(page)).toEqual([...[...legs].reverse(), b, a]);
    expect(page.has_more).toBe(false);
    for (const payout of page.data) {
      expect(payout).toEqual(
        executedOutput(await executeTool(getPayout, { payout_id: payout.id }, { runtime, actor })),
      );
    }
    expect(page.data.filter((p) => p.revenue_share === shareId).map((p) => p.amount)).toEqual([15, 15]);
    expect((await list({ ...actor, livemode: true })).data).toEqual([]);
  });

  it('filters by status, reference, revenue share and creation time', async () => {
    expect(ids(await list(actor, { status: 'settled' }))).toEqual([b]);
    expect(ids(await list(actor, { status: 'failed' }))).toEqual([]);
    expect(ids(await list(actor, { reference: 'rent' }))).toEqual([a]);
    expect((await list(actor, { revenue_share: shareId })).data.map((p) => p.id).sort()).toEqual([...legs].sort());
    expect(ids(await list(actor, { created_lte: '2026-05-01T09:02:00Z' }))).toEqual([b, a]);
  });

  it('pages with limit and starting_after, and back with ending_before', async () => {
    const first = await list(actor, { limit: 3 });
    expect(first.has_more).toBe(true);
    const next = await list(actor, { limit: 3, starting_after: first.data[2]!.id });
    expect([ids(next), next.has_more]).toEqual([[a], false]);
    const back = await list(actor, { limit: 1, ending_before: a });
    expect([ids(back), back.has_more]).toEqual([[b], true]);
  });

  it("another account's revenue share or payout id is the same as an unknown one", async () => {
    const other = await merchant();
    const unknownShare = await refusal(other, { revenue_share: shareId });
    expect(unknownShare).toMatchObject({ code: 'not_found', param: 'revenue_share' });
    expect(unknownShare.message).toBe(`No such revenue share: '${shareId}'.`);
    expect(await refusal(other, { revenue_share: 'split_nope' })).toMatchObject({ code: 'not_found' });
    const cursor = await refusal(other, { starting_after: a });
    expect(cursor).toMatchObject({ code: 'invalid_request', param: 'starting_after' });
  });

  it('refusals name the field; a key without payments:read is refused', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'pending' }, 'status'],
      [{ limit: 0 }, 'limit'],
      [{ reference: 'r'.repeat(65) }, 'reference'],
      [{ revenue_share: 's'.repeat(101) }, 'revenue_share'],
      [{ created_gte: '2026-05-01T09:00:00' }, 'created_gte'],
      [{ starting_after: a, ending_before: b }, 'ending_before'],
      [{ to_address: ADDRESS_A }, 'to_address'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
    expect((await refusal({ ...actor, scopes: new Set(['payouts:write']) }, {})).code).toBe('permission_denied');
  });
});
