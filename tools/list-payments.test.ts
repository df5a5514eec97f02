import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import type { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { paySandbox } from '../src/payments/sandbox-rail.ts';
import { testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { merchantActor, pageIds, toolRefusal } from '../test/support/tool-tests.ts';
import { createPayment } from './create-payment.ts';
import { getPayment } from './get-payment.ts';
import { listPayments } from './list-payments.ts';

// A fixed clock a minute apart per payment: creation order is list order, exactly.
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00Z')) });
});

const merchant = (): Promise<Actor> => merchantActor(runtime);

async function list(actor: Actor, input: Record<string, unknown> = {}) {
  return executedOutput(await executeTool(listPayments, input, { runtime, actor }));
}

const ids = pageIds;

const refusal = (actor: Actor, input: unknown): Promise<AppError> => toolRefusal(runtime, listPayments, actor, input);

describe('list_payments', () => {
  let actor: Actor;
  // Oldest first: a (09:01), b (09:02, paid, reference inv-b), c (09:03).
  const made: string[] = [];

  beforeAll(async () => {
    actor = await merchant();
    for (const reference of ['inv-a', 'inv-b', 'inv-c']) {
      runtime.clock.advance(60_000);
      const payment = executedOutput(
        await executeTool(
          createPayment,
          { amount: 10, currency: 'USD', redirect_url: 'https://shop.example/', reference },
          { runtime, actor },
        ),
      );
      made.push(payment.id);
    }
    await paySandbox(runtime, actor, made[1]!, 'succeeded');
    // Another merchant's payment and this merchant's live-mode view never show.
    await executeTool(
      createPayment,
      { amount: 10, currency: 'USD', redirect_url: 'https://shop.example/', reference: 'inv-a' },
      { runtime, actor: await merchant() },
    );
  });

  it('lists the merchant’s payments newest first, each as get_payment reads it', async () => {
    const page = await list(actor);
    expect(page.object).toBe('list');
    expect(ids(page)).toEqual([...made].reverse());
    expect(page.has_more).toBe(false);
    for (const payment of page.data) {
      expect(payment).toEqual(
        executedOutput(await executeTool(getPayment, { payment_id: payment.id }, { runtime, actor })),
      );
    }
    expect((await list({ ...actor, livemode: true })).data).toEqual([]);
  });

  it('pages with limit, starting_after and ending_before', async () => {
    const [a, b, c] = made as [string, string, string];
    const first = await list(actor, { limit: 2 });
    expect([ids(first), first.has_more]).toEqual([[c, b], true]);
    const next = await list(actor, { limit: 2, starting_after: b });
    expect([ids(next), next.has_more]).toEqual([[a], false]);
    const back = await list(actor, { limit: 1, ending_before: a });
    expect([ids(back), back.has_more]).toEqual([[b], true]);
    // A limit given as text (a query string) is read as a number.
    expect(ids(await list(actor, { limit: '1' }))).toEqual([c]);
  });

  it('filters by status, reference and creation time', async () => {
    const [a, b, c] = made as [string, string, string];
    expect(ids(await list(actor, { status: 'paid' }))).toEqual([b]);
    expect(ids(await list(actor, { status: 'pending' }))).toEqual([c, a]);
    expect(ids(await list(actor, { reference: 'inv-a' }))).toEqual([a]);
    expect(ids(await list(actor, { reference: 'nope' }))).toEqual([]);
    expect(
      ids(await list(actor, { created_gte: '2026-05-01T09:02:00Z', created_lte: '2026-05-01T09:02:00Z' })),
    ).toEqual([b]);
    expect(ids(await list(actor, { created_gte: '2026-05-01T10:02:00+01:00' }))).toEqual([c, b]);
  });

  it("another account's payment id as a cursor is the same 400 as an unknown one", async () => {
    const other = await merchant();
    for (const who of [other, { ...actor, livemode: true }]) {
      const error = await refusal(who, { starting_after: made[0] });
      expect(error).toMatchObject({ code: 'invalid_request', param: 'starting_after' });
      expect(error.message).toContain(`no such payment '${made[0]}'`);
    }
  });

  it('refusals name the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'approved' }, 'status'],
      [{ limit: 0 }, 'limit'],
      [{ limit: 101 }, 'limit'],
      [{ limit: 2.5 }, 'limit'],
      [{ reference: 'r'.repeat(65) }, 'reference'],
      [{ created_gte: 'yesterday' }, 'created_gte'],
      [{ starting_after: 'pay_unknown' }, 'starting_after'],
      [{ starting_after: made[0], ending_before: made[1] }, 'ending_before'],
      [{ currency: 'USD' }, 'currency'],
    ];
    for (const [input, param] of cases) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
  });

  it('a key without payments:read is refused', async () => {
    const error = await refusal({ ...actor, scopes: new Set(['payments:write']) }, {});
    expect(error.code).toBe('permission_denied');
  });
});
