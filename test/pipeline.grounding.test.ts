// ExecuteOptions.ground (issue 13 point 4): the agent runtime's check that every recipient, amount
// and payment id of a money call comes from the instruction or a typed read. The pipeline runs it
// on the validated input after the scope check, before the precheck and the policy; a refusal
// runs nothing and is recorded in the action log as a failed action with its error.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolResult } from '../src/agent/models/claude.ts';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { AppError, toAppError } from '../src/core/errors.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { createPayout } from '../tools/create-payout.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, availableBalance, firstKeyAuth, fund } from './support/money.ts';

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

const UNGROUNDED = 'to_address 0x1111…1111 appears neither in the instruction nor in a result read in this run.';

function refuse(): never {
  throw new AppError('ungrounded_argument', UNGROUNDED, { param: 'to_address' });
}

async function agentMerchant(): Promise<{ accountId: string; apiKey: string; actor: Actor }> {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, 1000);
  return { ...m, actor: { ...(await firstKeyAuth(runtime, m.accountId)), channel: 'agent' } };
}

function payoutsOf(accountId: string) {
  return runtime.db.selectFrom('payouts').select('id').where('account_id', '=', accountId).execute();
}

/** The account's own calls; funding its test balance is the service's step (channel system). */
function actionsOf(accountId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('channel', '<>', 'system')
    .execute();
}

describe('the grounding hook', () => {
  it('a refusal rejects with ungrounded_argument, writes no payout and records a failed action', async () => {
    const m = await agentMerchant();
    const call = executeTool(
      createPayout,
      { amount: 100, to_address: ADDRESS_A },
      { runtime, actor: m.actor, ground: refuse },
    );
    await expect(call).rejects.toMatchObject({ code: 'ungrounded_argument', status: 403, type: 'policy_error' });

    expect(await payoutsOf(m.accountId)).toHaveLength(0);
    expect(await availableBalance(app, m.apiKey)).toBe(1000);
    const actions = await actionsOf(m.accountId);
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({
      tool: 'create_payout',
      channel: 'agent',
      status: 'failed',
      decision: 'not_checked',
      input: { amount: 100, to_address: ADDRESS_A },
      error: { type: 'policy_error', code: 'ungrounded_argument', message: UNGROUNDED, param: 'to_address' },
      amount_settlement_minor: null,
    });
  });

  it('sees the validated input, after the scope check and before the precheck', async () => {
    const m = await agentMerchant();
    const seen: Array<[string, unknown]> = [];
    const record = (name: string, input: unknown): void => {
      seen.push([name, input]);
    };
    const ok = await executeTool(
      createPayout,
      { amount: 100, to_address: ADDRESS_A },
      { runtime, actor: m.actor, ground: record },
    );
    // Past the hook, the policy judged it: held as a first payout to a new address.
    expect(ok.kind).toBe('confirmation_required');
    // Validated: the schema's default asset is filled in.
    expect(seen).toEqual([['create_payout', { amount: 100, asset: 'USDC', to_address: ADDRESS_A }]]);

    // Invalid input and a missing scope are refused first: the hook never sees them.
    seen.length = 0;
    await expect(
      executeTool(createPayout, { amount: -1, to_address: ADDRESS_A }, { runtime, actor: m.actor, ground: record }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    const unscoped = { ...m.actor, scopes: new Set(['payments:read']) };
    await expect(
      executeTool(createPayout, { amount: 1, to_address: ADDRESS_A }, { runtime, actor: unscoped, ground: record }),
    ).rejects.toMatchObject({ code: 'permission_denied' });
    expect(seen).toEqual([]);

    // The precheck (which refuses a payout to the service's token contract) comes after it.
    await expect(
      executeTool(
        createPayout,
        { amount: 1, to_address: chain.tokenAddress },
        { runtime, actor: m.actor, ground: refuse },
      ),
    ).rejects.toMatchObject({ code: 'ungrounded_argument' });
  });

  it('in a dry run a refusal is returned but not recorded, like every refusal before the policy', async () => {
    const m = await agentMerchant();
    await expect(
      executeTool(
        createPayout,
        { amount: 100, to_address: ADDRESS_A },
        { runtime, actor: m.actor, dryRun: true, ground: refuse },
      ),
    ).rejects.toMatchObject({ code: 'ungrounded_argument' });
    expect(await actionsOf(m.accountId)).toHaveLength(0);
  });

  it('the code reaches the model: an is_error tool_result carrying code ungrounded_argument', () => {
    const body = toAppError(new AppError('ungrounded_argument', UNGROUNDED)).toBody().error;
    expect(body).toEqual({ type: 'policy_error', message: UNGROUNDED, code: 'ungrounded_argument' });
    const block = toolResult('toolu_1', { status: 'error', error: body });
    expect(block.is_error).toBe(true);
    expect(String(block.content)).toContain('"code":"ungrounded_argument"');
  });
});
