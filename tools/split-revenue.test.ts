import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import type { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { DEFAULT_POLICY, PolicySchema, policyToJson } from '../src/policy/policy-schema.ts';
import { savePolicy } from '../src/policy/store.ts';
import { testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C, expectLedgerBalanced } from '../test/support/money.ts';
import {
  availableUsdc,
  expectInvalidRequests,
  merchantActor,
  settledPayment,
  toolRefusal,
} from '../test/support/tool-tests.ts';
import { createPayment } from './create-payment.ts';
import { splitRevenue } from './split-revenue.ts';

// Test funding and the recipient checks run on the embedded devnet the runtime starts on first use.
const NOW = '2026-05-01T09:00:00.000Z';
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date(NOW)) });
  app = await testApp(runtime);
});

/** A merchant with `funds` USDC in its test balance. */
const merchant = (funds: number, channel: Actor['channel'] = 'api'): Promise<Actor> =>
  merchantActor(runtime, { app, funds, channel });

async function payment(actor: Actor): Promise<string> {
  const created = executedOutput(
    await executeTool(
      createPayment,
      // 100 USD is 100 USDC at the sandbox rate: 99 credited after the 1% fee.
      { amount: 100, currency: 'USD', redirect_url: 'https://shop.example/thanks' },
      { runtime, actor },
    ),
  );
  return created.id;
}

const available = (actor: Actor): Promise<number> => availableUsdc(runtime, actor);

async function sharesOf(actor: Actor) {
  return runtime.db.selectFrom('revenue_shares').selectAll().where('account_id', '=', actor.accountId).execute();
}

async function payoutsOf(actor: Actor) {
  return runtime.db.selectFrom('payouts').selectAll().where('account_id', '=', actor.accountId).execute();
}

const refusal = (actor: Actor, input: unknown, idempotencyKey?: string): Promise<AppError> =>
  toolRefusal(runtime, splitRevenue, actor, input, idempotencyKey);

const SEVENTY_THIRTY = [
  { to_address: ADDRESS_A, share_bps: 7000 },
  { to_address: ADDRESS_B, share_bps: 3000 },
];

// The legs of a share are made one millisecond apart, in the order given, so that every read shows them in it.
const leg = (id: string, amount: number, to: string, reference: string | null, index = 0) => ({
  id: expect.stringMatching(/^po_/),
  object: 'payout',
  livemode: false,
  status: 'queued',
  amount,
  asset: 'USDC',
  to_address: to,
  reference,
  memo: null,
  revenue_share: id,
  chain_id: null,
  tx_hash: null,
  gas_used: null,
  failure_reason: null,
  created: new Date(Date.parse(NOW) + index).toISOString(),
  settled_at: null,
  failed_at: null,
});

describe('split_revenue', () => {
  it('shares an amount of the balance: one queued payout per recipient, by basis points', async () => {
    const actor = await merchant(100);
    const result = await executeTool(
      splitRevenue,
      { amount: 10, splits: SEVENTY_THIRTY, reference: 'team-may' },
      { runtime, actor },
    );
    expect(result).toMatchObject({ kind: 'executed', decision: 'allow', actionId: expect.any(String) });
    const share = executedOutput(result);
    expect(share).toEqual({
      id: expect.stringMatching(/^split_/),
      object: 'revenue_share',
      livemode: false,
      payment_id: null,
      amount: 10,
      asset: 'USDC',
      reference: 'team-may',
      legs: [leg(share.id, 7, ADDRESS_A, 'team-may', 0), leg(share.id, 3, ADDRESS_B, 'team-may', 1)],
      created: NOW,
    });
    expect(await available(actor)).toBe(90);
    // Each leg is queued for the chain like a payout.
    const transfers = await runtime.db
      .selectFrom('transfers')
      .select(['kind', 'amount_minor'])
      .where(
        'source_id',
        'in',
        share.legs.map((l) => l.id),
      )
      .orderBy('amount_minor', 'desc')
      .execute();
    expect(transfers).toEqual([
      { kind: 'split_leg', amount_minor: 7_000_000n },
      { kind: 'split_leg', amount_minor: 3_000_000n },
    ]);
    await expectLedgerBalanced(runtime);
  });

  it('legs round down; the leftover micro-units go one by one from the first leg, so they add up', async () => {
    const actor = await merchant(1);
    const share = executedOutput(
      await executeTool(
        splitRevenue,
        {
          amount: 0.00001,
          splits: [
            { to_address: ADDRESS_A, share_bps: 3334 },
            { to_address: ADDRESS_B, share_bps: 3333 },
            { to_address: ADDRESS_C, share_bps: 3333 },
          ],
        },
        { runtime, actor },
      ),
    );
    expect(share.legs.map((l) => l.amount)).toEqual([0.000004, 0.000003, 0.000003]);
  });

  it('equal parts are equal to the smallest unit: 100 USDC in three is 33.333334, 33.333333, 33.333333', async () => {
    const actor = await merchant(101);
    const share = executedOutput(
      await executeTool(
        splitRevenue,
        {
          amount: 100,
          splits: [
            { to_address: ADDRESS_A, share_parts: 1 },
            { to_address: ADDRESS_B, share_parts: 1 },
            { to_address: ADDRESS_C, share_parts: 1 },
          ],
        },
        { runtime, actor },
      ),
    );
    // In basis points the same split was 33.34 / 33.33 / 33.33 (3334/3333/3333): a tenth of a percent apart.
    expect(share.legs.map((l) => l.amount)).toEqual([33.333334, 33.333333, 33.333333]);
    const thirds = executedOutput(
      await executeTool(
        splitRevenue,
        {
          amount: 0.00001,
          splits: [
            { to_address: ADDRESS_A, share_parts: 2 },
            { to_address: ADDRESS_B, share_parts: 1 },
          ],
        },
        { runtime, actor },
      ),
    );
    expect(thirds.legs.map((l) => l.amount)).toEqual([0.000007, 0.000003]);
  });

  it("shares a settled payment's proceeds once; a second share of them is a conflict naming payment_id", async () => {
    const actor = await merchant(0);
    const paymentId = await settledPayment(runtime, actor);
    const share = executedOutput(
      await executeTool(
        splitRevenue,
        {
          payment_id: paymentId,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: ADDRESS_C, share_bps: 5000 },
          ],
        },
        { runtime, actor },
      ),
    );
    expect(share).toMatchObject({ payment_id: paymentId, amount: 99, reference: null });
    expect(share.legs.map((l) => [l.to_address, l.amount])).toEqual([
      [ADDRESS_A, 49.5],
      [ADDRESS_C, 49.5],
    ]);
    expect(await available(actor)).toBe(0);

    const again = await refusal(actor, {
      payment_id: paymentId,
      splits: [{ to_address: ADDRESS_B, share_bps: 10_000 }],
    });
    expect(again).toMatchObject({ code: 'conflict', param: 'payment_id' });
    expect(await sharesOf(actor)).toHaveLength(1);
  });

  it('a payment not settled into the balance is a conflict; an unknown or another account’s payment is a 404', async () => {
    const actor = await merchant(0);
    const unpaid = await payment(actor);
    const notSettled = await refusal(actor, { payment_id: unpaid, splits: SEVENTY_THIRTY });
    expect(notSettled).toMatchObject({ code: 'conflict', param: 'payment_id' });
    expect(notSettled.message).toContain('it is pending');

    const other = await merchant(0);
    const theirs = await settledPayment(runtime, other);
    for (const [who, id] of [
      [actor, theirs],
      [{ ...other, livemode: true }, theirs],
      [actor, 'pay_unknown'],
    ] as const) {
      const error = await refusal(who, { payment_id: id, splits: SEVENTY_THIRTY });
      expect(error, id).toMatchObject({ code: 'not_found', param: 'payment_id' });
    }
    expect(await sharesOf(actor)).toEqual([]);
    expect(await sharesOf(other)).toEqual([]);
  });

  it('more than the balance is insufficient_funds, and no share or leg is written', async () => {
    const actor = await merchant(100);
    const error = await refusal(actor, { amount: 100.000001, splits: SEVENTY_THIRTY });
    expect(error.code).toBe('insufficient_funds');
    expect(await sharesOf(actor)).toEqual([]);
    expect(await payoutsOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(100);
  });

  it('refusals name the field and the rule; nothing is written', async () => {
    const actor = await merchant(10);
    const chain = await runtime.chain();
    const many = Array.from({ length: 21 }, (_, i) => ({
      to_address: `0x${(i + 1).toString(16).padStart(40, '0')}`,
      share_bps: i === 0 ? 8000 : 100,
    }));
    const cases: [Record<string, unknown>, string, string][] = [
      [{ splits: SEVENTY_THIRTY }, 'payment_id', 'give exactly one of them'],
      [{ amount: 1, payment_id: 'pay_x', splits: SEVENTY_THIRTY }, 'payment_id', 'give exactly one of them'],
      [{ amount: 1, splits: [{ to_address: ADDRESS_A, share_bps: 9000 }] }, 'splits', 'they add up to 9000'],
      [{ amount: 1, splits: [] }, 'splits', 'at least one recipient'],
      [{ amount: 1, splits: many }, 'splits', 'at most 20 recipients'],
      [
        {
          amount: 1,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: ADDRESS_A.toLowerCase(), share_bps: 5000 },
          ],
        },
        'splits[1].to_address',
        'appears twice',
      ],
      [{ amount: 1, splits: [{ to_address: ADDRESS_A, share_bps: 10_000.5 }] }, 'splits[0].share_bps', 'whole number'],
      [{ amount: 1, splits: [{ to_address: ADDRESS_A }] }, 'splits', 'exactly one of share_bps or share_parts'],
      [
        { amount: 1, splits: [{ to_address: ADDRESS_A, share_bps: 10_000, share_parts: 1 }] },
        'splits',
        'exactly one of share_bps or share_parts',
      ],
      [
        {
          amount: 1,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: ADDRESS_B, share_parts: 1 },
          ],
        },
        'splits',
        'not a mix',
      ],
      [{ amount: 1, splits: [{ to_address: ADDRESS_A, share_parts: 0 }] }, 'splits[0].share_parts', 'between 1 and'],
      [{ amount: 1, splits: [{ to_address: '0x12', share_bps: 10_000 }] }, 'splits[0].to_address', '0x EVM address'],
      [{ amount: 0, splits: SEVENTY_THIRTY }, 'amount', 'positive'],
      [{ amount: 1, asset: 'EURC', splits: SEVENTY_THIRTY }, 'asset', "asset must be 'USDC'"],
      // The precheck: tokens sent to the service's own contracts are lost.
      [
        {
          amount: 1,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: chain.tokenAddress, share_bps: 5000 },
          ],
        },
        'splits[1].to_address',
        'contract of the service',
      ],
      // A share that rounds to nothing (1 micro-unit between two) is refused, not paid as 0.
      [
        {
          amount: 0.000001,
          splits: [
            { to_address: ADDRESS_A, share_bps: 5000 },
            { to_address: ADDRESS_B, share_bps: 5000 },
          ],
        },
        'splits',
        'would be zero',
      ],
    ];
    await expectInvalidRequests((input) => refusal(actor, input), cases);
    expect(await sharesOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(10);
  });

  it('a key without payouts:write is refused', async () => {
    const actor = await merchant(10);
    const error = await refusal(
      { ...actor, scopes: new Set(['payments:read', 'payments:write']) },
      {
        amount: 1,
        splits: SEVENTY_THIRTY,
      },
    );
    expect(error.code).toBe('permission_denied');
  });

  it('the same Idempotency-Key replays the share once; other parameters are idempotency_conflict', async () => {
    const actor = await merchant(100);
    const input = { amount: 10, splits: SEVENTY_THIRTY };
    const first = await executeTool(splitRevenue, input, { runtime, actor, idempotencyKey: 'split-1' });
    const again = await executeTool(splitRevenue, input, { runtime, actor, idempotencyKey: 'split-1' });
    expect(again).toMatchObject({ kind: 'executed', replayed: true });
    expect(executedOutput(again)).toEqual(executedOutput(first));
    expect((await refusal(actor, { ...input, amount: 11 }, 'split-1')).code).toBe('idempotency_conflict');
    expect(await sharesOf(actor)).toHaveLength(1);
    expect(await available(actor)).toBe(90);
  });

  it('a reference names one share for good: the same split again returns it, another split is a 409', async () => {
    const actor = await merchant(100);
    const input = { amount: 10, splits: SEVENTY_THIRTY, reference: 'q2' };
    const first = executedOutput(await executeTool(splitRevenue, input, { runtime, actor }));
    // The same recipients in another order are the same split.
    const again = await executeTool(
      splitRevenue,
      { ...input, splits: [...SEVENTY_THIRTY].reverse() },
      { runtime, actor },
    );
    expect(again).toMatchObject({ kind: 'executed', replayed: true });
    // The replay is the share as first made, its legs in the order first given.
    expect(executedOutput(again)).toEqual(first);
    for (const other of [
      { amount: 11 },
      {
        splits: [
          { to_address: ADDRESS_A, share_bps: 6000 },
          { to_address: ADDRESS_B, share_bps: 4000 },
        ],
      },
    ]) {
      const error = await refusal(actor, { ...input, ...other });
      expect(error, JSON.stringify(other)).toMatchObject({ code: 'conflict', param: 'reference' });
      expect(error.message).toContain(first.id);
    }
    expect(await sharesOf(actor)).toHaveLength(1);
    expect(await available(actor)).toBe(90);
  });
});

describe('split_revenue policy: the total, and every recipient', () => {
  async function withPolicy(actor: Actor, edit: (policy: ReturnType<typeof policyToJson>) => void): Promise<void> {
    const policy = policyToJson(DEFAULT_POLICY);
    edit(policy);
    await savePolicy(runtime.db, actor, PolicySchema.parse(policy), null, runtime.clock.now());
  }

  it('on the agent channel, recipients never paid before hold the share for a person', async () => {
    const actor = await merchant(100, 'agent');
    const held = await executeTool(splitRevenue, { amount: 10, splits: SEVENTY_THIRTY }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${held.kind}`);
    expect(held.confirmation.reasons).toContainEqual(
      expect.objectContaining({ rule: 'first_payout', outcome: 'require_confirmation' }),
    );
    expect(held.confirmation.summary).toBe(`Split 10.000000 USDC between ${ADDRESS_A} (70%), ${ADDRESS_B} (30%)`);
    expect(await sharesOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(100);
  });

  it('the total above deny_above, or one denylisted recipient, is policy_denied and nothing moves', async () => {
    const actor = await merchant(100);
    await withPolicy(actor, (policy) => {
      policy.channels.api.deny_above = 9.999999;
      policy.recipients.denylist = [ADDRESS_C];
    });
    const above = await refusal(actor, { amount: 10, splits: SEVENTY_THIRTY });
    expect(above.code).toBe('policy_denied');
    const denylisted = await refusal(actor, {
      amount: 1,
      splits: [
        { to_address: ADDRESS_A, share_bps: 9999 },
        { to_address: ADDRESS_C, share_bps: 1 },
      ],
    });
    expect(denylisted.code).toBe('policy_denied');
    expect(await sharesOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(100);
    // Within the limit, to allowed recipients, it runs.
    expect(
      (await executeTool(splitRevenue, { amount: 9.999999, splits: SEVENTY_THIRTY }, { runtime, actor })).kind,
    ).toBe('executed');
  });
});
