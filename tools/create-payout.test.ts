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
import { availableUsdc, expectInvalidRequests, merchantActor, toolRefusal } from '../test/support/tool-tests.ts';
import { createPayout } from './create-payout.ts';
import { getPayout } from './get-payout.ts';

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

const available = (actor: Actor): Promise<number> => availableUsdc(runtime, actor);

async function payoutsOf(actor: Actor) {
  return runtime.db.selectFrom('payouts').selectAll().where('account_id', '=', actor.accountId).execute();
}

const refusal = (actor: Actor, input: unknown, idempotencyKey?: string): Promise<AppError> =>
  toolRefusal(runtime, createPayout, actor, input, idempotencyKey);

async function withPolicy(actor: Actor, edit: (policy: ReturnType<typeof policyToJson>) => void): Promise<void> {
  const policy = policyToJson(DEFAULT_POLICY);
  edit(policy);
  await savePolicy(runtime.db, actor, PolicySchema.parse(policy), null, runtime.clock.now());
}

describe('create_payout', () => {
  it('queues a payout: the balance gives the amount up at once; the transfer is queued for the chain', async () => {
    const actor = await merchant(1000);
    const result = await executeTool(
      createPayout,
      { amount: 100.5, to_address: ADDRESS_A, reference: 'inv-1', memo: 'March invoice' },
      { runtime, actor },
    );
    expect(result).toMatchObject({ kind: 'executed', decision: 'allow', actionId: expect.any(String) });
    const payout = executedOutput(result);
    expect(payout).toEqual({
      id: expect.stringMatching(/^po_/),
      object: 'payout',
      livemode: false,
      status: 'queued',
      amount: 100.5,
      asset: 'USDC',
      to_address: ADDRESS_A,
      reference: 'inv-1',
      memo: 'March invoice',
      revenue_share: null,
      chain_id: null,
      tx_hash: null,
      gas_used: null,
      failure_reason: null,
      created: NOW,
      settled_at: null,
      failed_at: null,
    });
    expect(await available(actor)).toBe(899.5);
    expect(executedOutput(await executeTool(getPayout, { payout_id: payout.id }, { runtime, actor }))).toEqual(payout);
    const [row] = await payoutsOf(actor);
    const transfer = await runtime.db
      .selectFrom('transfers')
      .selectAll()
      .where('source_id', '=', payout.id)
      .executeTakeFirstOrThrow();
    expect(transfer).toMatchObject({ id: row!.transfer_id, kind: 'payout', amount_minor: 100_500_000n });
    await expectLedgerBalanced(runtime);
  });

  it('more than the balance is insufficient_funds, and nothing is written', async () => {
    const actor = await merchant(50);
    const error = await refusal(actor, { amount: 50.000001, to_address: ADDRESS_A });
    expect(error.code).toBe('insufficient_funds');
    expect(await payoutsOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(50);
    // All of it is fine.
    expect((await executeTool(createPayout, { amount: 50, to_address: ADDRESS_A }, { runtime, actor })).kind).toBe(
      'executed',
    );
  });

  it('refusals name the field and the rule; nothing is written', async () => {
    const actor = await merchant(10);
    const chain = await runtime.chain();
    const cases: [Record<string, unknown>, string, string][] = [
      [{ amount: 0, to_address: ADDRESS_A }, 'amount', 'positive'],
      [{ amount: 1.0000001, to_address: ADDRESS_A }, 'amount', 'at most 6 decimal places'],
      [{ amount: '1', to_address: ADDRESS_A }, 'amount', 'number of USDC'],
      [{ amount: 1, asset: 'USDT', to_address: ADDRESS_A }, 'asset', "asset must be 'USDC'"],
      [{ amount: 1 }, 'to_address', 'Missing required parameter'],
      [{ amount: 1, to_address: 'alice.eth' }, 'to_address', '0x EVM address'],
      // A wrong EIP-55 checksum is almost surely a typo.
      [{ amount: 1, to_address: '0xAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAa' }, 'to_address', 'checksum'],
      [{ amount: 1, to_address: `0x${'0'.repeat(40)}` }, 'to_address', 'zero address'],
      // Tokens sent to the token or the batch contract are lost for good (the precheck).
      [{ amount: 1, to_address: chain.tokenAddress }, 'to_address', 'contract of the service'],
      [{ amount: 1, to_address: chain.batchAddress }, 'to_address', 'contract of the service'],
      [{ amount: 1, to_address: ADDRESS_A, memo: 'm'.repeat(301) }, 'memo', 'at most 300 characters'],
      [{ amount: 1, to_address: ADDRESS_A, network: 'base' }, 'network', 'unknown parameter'],
    ];
    await expectInvalidRequests((input) => refusal(actor, input), cases);
    expect(await payoutsOf(actor)).toEqual([]);
    expect(await available(actor)).toBe(10);
  });

  it('a key without payouts:write is refused', async () => {
    const actor = await merchant(10);
    const error = await refusal(
      { ...actor, scopes: new Set(['payments:write', 'payments:read']) },
      {
        amount: 1,
        to_address: ADDRESS_A,
      },
    );
    expect(error.code).toBe('permission_denied');
    expect(await payoutsOf(actor)).toEqual([]);
  });

  it('the same Idempotency-Key pays once and replays; other parameters are idempotency_conflict', async () => {
    const actor = await merchant(100);
    const input = { amount: 10, to_address: ADDRESS_A };
    const first = await executeTool(createPayout, input, { runtime, actor, idempotencyKey: 'payout-1' });
    const again = await executeTool(createPayout, input, { runtime, actor, idempotencyKey: 'payout-1' });
    expect(again).toMatchObject({ kind: 'executed', replayed: true });
    expect(executedOutput(again)).toEqual(executedOutput(first));
    expect((await refusal(actor, { ...input, amount: 11 }, 'payout-1')).code).toBe('idempotency_conflict');
    expect(await payoutsOf(actor)).toHaveLength(1);
    expect(await available(actor)).toBe(90);
  });

  it('a reference names one payout for good: repeated it returns that payout; other parameters are a 409', async () => {
    const actor = await merchant(100);
    const input = { amount: 10, to_address: ADDRESS_A, reference: 'rent-may' };
    const first = executedOutput(await executeTool(createPayout, input, { runtime, actor }));
    const again = await executeTool(
      createPayout,
      // The same recipient in lower case is the same address.
      { ...input, to_address: ADDRESS_A.toLowerCase() },
      { runtime, actor },
    );
    expect(again).toMatchObject({ kind: 'executed', replayed: true, output: first });
    for (const other of [{ amount: 11 }, { to_address: ADDRESS_B }, { memo: 'changed' }]) {
      const error = await refusal(actor, { ...input, ...other });
      expect(error, JSON.stringify(other)).toMatchObject({ code: 'conflict', param: 'reference' });
      expect(error.message).toContain(first.id);
    }
    expect(await payoutsOf(actor)).toHaveLength(1);
    expect(await available(actor)).toBe(90);

    // Another account's reference is its own.
    const stranger = await merchant(20);
    const theirs = executedOutput(await executeTool(createPayout, input, { runtime, actor: stranger }));
    expect(theirs.id).not.toBe(first.id);
  });
});

describe('create_payout policy', () => {
  it('agent channel defaults: a first payout to a new address is held; above 1,000 held; above 50,000 denied', async () => {
    const actor = await merchant(60_000, 'agent');
    const first = await executeTool(createPayout, { amount: 10, to_address: ADDRESS_C }, { runtime, actor });
    if (first.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${first.kind}`);
    // Every rule's verdict is kept; only the new recipient holds it.
    const holding = first.confirmation.reasons.filter((r) => r.outcome === 'require_confirmation');
    expect(holding.map((r) => r.rule)).toEqual(['first_payout']);
    expect(first.confirmation.summary).toBe(`Pay out 10.000000 USDC to ${ADDRESS_C}`);

    // Once the account has paid the address (on the api channel, which does not hold), 500 runs.
    await executeTool(
      createPayout,
      { amount: 1, to_address: ADDRESS_C },
      { runtime, actor: { ...actor, channel: 'api' } },
    );
    const known = await executeTool(createPayout, { amount: 500, to_address: ADDRESS_C }, { runtime, actor });
    expect(known).toMatchObject({ kind: 'executed', decision: 'allow' });

    const large = await executeTool(createPayout, { amount: 5000, to_address: ADDRESS_C }, { runtime, actor });
    if (large.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${large.kind}`);
    expect(large.confirmation.reasons).toContainEqual(
      expect.objectContaining({ rule: 'confirm_above', outcome: 'require_confirmation' }),
    );

    const denied = await refusal(actor, { amount: 50_001, to_address: ADDRESS_C });
    expect(denied.code).toBe('policy_denied');
    expect(denied.message).toContain('50,000');

    // Held and denied moved nothing: only the 1 and the 500 left the balance.
    expect(await available(actor)).toBe(60_000 - 501);
    expect((await payoutsOf(actor)).map((p) => p.amount_minor).sort()).toEqual([1_000_000n, 500_000_000n]);
    const statuses = await runtime.db
      .selectFrom('agent_actions')
      .select('status')
      .where('account_id', '=', actor.accountId)
      .where('tool', '=', 'create_payout')
      .execute();
    expect(statuses.map((s) => s.status).sort()).toEqual(['denied', 'executed', 'executed', 'held', 'held']);
  });

  it('a held payout replays its hold under the same Idempotency-Key', async () => {
    const actor = await merchant(5000, 'agent');
    const input = { amount: 2000, to_address: ADDRESS_A };
    const held = await executeTool(createPayout, input, { runtime, actor, idempotencyKey: 'big-one' });
    const again = await executeTool(createPayout, input, { runtime, actor, idempotencyKey: 'big-one' });
    if (held.kind !== 'confirmation_required' || again.kind !== 'confirmation_required')
      throw new Error('expected holds');
    expect(again.replayed).toBe(true);
    expect(again.confirmation.confirmation_id).toBe(held.confirmation.confirmation_id);
    expect(await payoutsOf(actor)).toEqual([]);
  });

  it('a denylisted recipient is denied on every channel, the api one included', async () => {
    const actor = await merchant(100);
    await withPolicy(actor, (policy) => {
      policy.recipients.denylist = [ADDRESS_B];
    });
    const error = await refusal(actor, { amount: 1, to_address: ADDRESS_B.toLowerCase() });
    expect(error.code).toBe('policy_denied');
    expect(await payoutsOf(actor)).toEqual([]);
    expect((await executeTool(createPayout, { amount: 1, to_address: ADDRESS_A }, { runtime, actor })).kind).toBe(
      'executed',
    );
  });

  it('an api confirm_above holds on the api channel too', async () => {
    const actor = await merchant(100);
    await withPolicy(actor, (policy) => {
      policy.channels.api.confirm_above = 10;
    });
    expect((await executeTool(createPayout, { amount: 10, to_address: ADDRESS_A }, { runtime, actor })).kind).toBe(
      'executed',
    );
    expect(
      (await executeTool(createPayout, { amount: 10.000001, to_address: ADDRESS_A }, { runtime, actor })).kind,
    ).toBe('confirmation_required');
    expect(await available(actor)).toBe(90);
  });
});
