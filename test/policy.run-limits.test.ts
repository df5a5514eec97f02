// The money actions of one agent run count together against the confirmation threshold
// (docs/policy.md, issue 13 point 5): four 900 USDC payouts asked for in one message are one
// 3,600 USDC decision. Driven through executeTool with a real database, as the agent runtime calls it.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { executeTool, type ToolResult } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { newId } from '../src/domain/ids.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { approveConfirmation } from '../src/pipeline/approvals.ts';
import type { DeclaredCall } from '../src/policy/run-plan.ts';
import { createPayout } from '../tools/create-payout.ts';
import { getBalance } from '../tools/get-balance.ts';
import { TOOLS } from '../tools/registry.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_B, availableBalance, editPolicy, firstKeyAuth, fund, post } from './support/money.ts';

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

const NINE_HUNDRED = { amount: 900, to_address: ADDRESS_A };
const FOUR_PAYOUTS: DeclaredCall[] = Array.from({ length: 4 }, () => ({ tool: createPayout, input: NINE_HUNDRED }));

interface Merchant {
  accountId: string;
  apiKey: string;
  actor: Actor;
}

/**
 * An account funded with 10,000 USDC whose agent channel confirms above 1,000 USDC, and which has
 * paid ADDRESS_A before (over REST), so that only the amount rules speak about a payout to it.
 */
async function merchant(): Promise<Merchant> {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, 10_000);
  const put = await editPolicy(app, m.apiKey, (policy) => {
    policy.channels.agent.confirm_above = '1000';
  });
  expect(put.statusCode, put.body).toBe(200);
  expect((await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_A })).statusCode).toBe(200);
  return { ...m, actor: { ...(await firstKeyAuth(runtime, m.accountId)), channel: 'agent' } };
}

/** An agent run row, as POST /agent/settle inserts it (agent_actions.run_id references it). */
async function agentRun(m: Merchant, dryRun = false): Promise<string> {
  const id = newId('run');
  await runtime.db
    .insertInto('agent_runs')
    .values({
      id,
      account_id: m.accountId,
      livemode: false,
      channel: 'agent',
      key_id: m.actor.keyId,
      instruction: 'pay 0x1111…1111 900 USDC four times',
      model: 'test',
      dry_run: dryRun,
      status: 'running',
      reply: '',
      created_at: runtime.clock.now(),
    })
    .execute();
  return id;
}

function payoutsTo(m: Merchant, address: string) {
  return runtime.db
    .selectFrom('payouts')
    .select(['id', 'amount_minor'])
    .where('account_id', '=', m.accountId)
    .where('to_address', '=', address)
    .execute();
}

function runActions(runId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

function confirmAboveReason(result: ToolResult<unknown>): string | undefined {
  const reasons =
    result.kind === 'confirmation_required'
      ? result.confirmation.reasons
      : result.kind === 'planned'
        ? result.decision.reasons
        : [];
  return reasons.find((r) => r.rule === 'confirm_above')?.reason;
}

async function fourPayouts(m: Merchant, options: { runId?: string | (() => Promise<string>); plan?: boolean }) {
  const results: ToolResult<unknown>[] = [];
  for (let i = 0; i < 4; i++) {
    const runId = typeof options.runId === 'function' ? await options.runId() : options.runId;
    results.push(
      await executeTool(createPayout, NINE_HUNDRED, {
        runtime,
        actor: m.actor,
        runId,
        ...(options.plan ? { runPlan: FOUR_PAYOUTS } : {}),
      }),
    );
  }
  return results;
}

describe('the money actions of one agent run count together against confirm_above', () => {
  it('four 900 USDC payouts the run declared up front are one 3,600 USDC decision: all four are held', async () => {
    const m = await merchant();
    const runId = await agentRun(m);
    const results = await fourPayouts(m, { runId, plan: true });

    expect(results.map((r) => r.kind)).toEqual(Array(4).fill('confirmation_required'));
    expect(confirmAboveReason(results[0]!)).toBe(
      "this run moves 3,600 USDC in total (4 actions, this one 900 USDC), above the agent channel's confirmation threshold of 1,000 USDC",
    );
    expect(await payoutsTo(m, ADDRESS_A)).toHaveLength(1); // only the REST payout of 1 USDC
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1);
    const actions = await runActions(runId);
    expect(actions.map((a) => [a.status, a.amount_settlement_minor])).toEqual(Array(4).fill(['held', 900_000_000n]));
  });

  it('without a declared plan, the running total: the first runs, the second and later are held', async () => {
    const m = await merchant();
    const runId = await agentRun(m);
    const results = await fourPayouts(m, { runId });

    expect(results.map((r) => r.kind)).toEqual([
      'executed',
      'confirmation_required',
      'confirmation_required',
      'confirmation_required',
    ]);
    expect(confirmAboveReason(results[1]!)).toBe(
      "this run moves 1,800 USDC in total (2 actions, this one 900 USDC), above the agent channel's confirmation threshold of 1,000 USDC",
    );
    // Held actions count: they may still be approved, and the rest must not slip through meanwhile.
    expect(confirmAboveReason(results[3]!)).toContain('3,600 USDC in total (4 actions');
    expect(await payoutsTo(m, ADDRESS_A)).toHaveLength(2);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1 - 900);
  });

  it('in different runs (or outside any run) each 900 USDC payout is judged alone and runs', async () => {
    const m = await merchant();
    const separate = await fourPayouts(m, { runId: () => agentRun(m) });
    expect(separate.map((r) => r.kind)).toEqual(Array(4).fill('executed'));
    const outside = await fourPayouts(m, {});
    expect(outside.map((r) => r.kind)).toEqual(Array(4).fill('executed'));
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1 - 8 * 900);
  });

  it('a dry run reports require_confirmation for the run total, records the plan and moves nothing', async () => {
    const m = await merchant();
    const runId = await agentRun(m, true);
    const declared = await Promise.all(
      [0, 1, 2, 3].map(() =>
        executeTool(createPayout, NINE_HUNDRED, {
          runtime,
          actor: m.actor,
          runId,
          runPlan: FOUR_PAYOUTS,
          dryRun: true,
        }),
      ),
    );
    expect(declared.map((r) => (r.kind === 'planned' ? r.decision.outcome : r.kind))).toEqual(
      Array(4).fill('require_confirmation'),
    );
    expect(confirmAboveReason(declared[0]!)).toContain('3,600 USDC in total (4 actions');

    // Without a plan, a dry run counts its own planned actions like a real run counts its actions.
    const stepwise = await agentRun(m, true);
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await executeTool(createPayout, NINE_HUNDRED, {
        runtime,
        actor: m.actor,
        runId: stepwise,
        dryRun: true,
      });
      outcomes.push(r.kind === 'planned' ? r.decision.outcome : r.kind);
    }
    expect(outcomes).toEqual(['allow', 'require_confirmation', 'require_confirmation']);
    expect((await runActions(stepwise)).map((a) => a.status)).toEqual(['planned', 'planned', 'planned']);
    expect(await payoutsTo(m, ADDRESS_A)).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1);
  });

  it('approving a held action of the run executes it: the approval satisfies the run total too', async () => {
    const m = await merchant();
    const runId = await agentRun(m);
    const results = await fourPayouts(m, { runId, plan: true });
    const approverKey = await issueApiKey(runtime.db, {
      accountId: m.accountId,
      livemode: false,
      scopes: ['approvals'],
    });
    const approver = { accountId: m.accountId, livemode: false, keyId: approverKey.id, scopes: new Set(['approvals']) };

    for (const held of results.slice(0, 2)) {
      if (held.kind !== 'confirmation_required') throw new Error('expected a hold');
      const approved = await approveConfirmation(runtime, TOOLS, approver, held.confirmation.confirmation_id);
      expect(approved.kind).toBe('executed');
    }
    const actions = await runActions(runId);
    expect(actions.map((a) => a.status)).toEqual(['executed', 'executed', 'held', 'held']);
    // The approved rows keep the amount they were held with: the run still counts them once each.
    expect(actions.map((a) => a.amount_settlement_minor)).toEqual(Array(4).fill(900_000_000n));
    expect(await availableBalance(app, m.apiKey)).toBe(10_000 - 1 - 1800);
  });

  it('denied and failed actions of the run do not count: they move no money', async () => {
    const m = await merchant();
    const runId = await agentRun(m);
    // Denied: above the agent channel's per-action ceiling of 50,000 USDC.
    await expect(
      executeTool(createPayout, { amount: 60_000, to_address: ADDRESS_A }, { runtime, actor: m.actor, runId }),
    ).rejects.toMatchObject({ code: 'policy_denied' });
    // Failed: refused by validation.
    await expect(
      executeTool(createPayout, { amount: 'lots', to_address: ADDRESS_A }, { runtime, actor: m.actor, runId }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    const after = await executeTool(createPayout, NINE_HUNDRED, { runtime, actor: m.actor, runId });
    expect(after.kind).toBe('executed');
    expect((await runActions(runId)).map((a) => a.status)).toEqual(['denied', 'failed', 'executed']);
  });

  it('a declared plan counts only the money calls it could make: reads and invalid calls add nothing', async () => {
    const m = await merchant();
    const runId = await agentRun(m);
    const plan: DeclaredCall[] = [
      { tool: getBalance, input: {} },
      { tool: createPayout, input: NINE_HUNDRED },
      { tool: createPayout, input: { amount: 900 } }, // no address: it cannot run as declared
      { tool: createPayout, input: { amount: 100, to_address: ADDRESS_B } },
    ];
    const first = await executeTool(createPayout, NINE_HUNDRED, { runtime, actor: m.actor, runId, runPlan: plan });
    expect(first.kind).toBe('executed');
    const [action] = await runActions(runId);
    expect(JSON.stringify(action?.reasons)).toContain(
      "this run moves 1,000 USDC in total (2 actions, this one 900 USDC), within the agent channel's confirmation threshold of 1,000 USDC",
    );
  });
});
