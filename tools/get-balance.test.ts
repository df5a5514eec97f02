import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, firstKeyAuth, fund } from '../test/support/money.ts';
import { createPayout } from './create-payout.ts';
import { getBalance } from './get-balance.ts';

// Test funding and payouts run on the embedded devnet the runtime starts on first use.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
});

async function merchant(): Promise<{ actor: Actor; apiKey: string }> {
  const account = await testAccount(runtime);
  return { actor: { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'api' }, apiKey: account.apiKey };
}

async function balance(actor: Actor) {
  return executedOutput(await executeTool(getBalance, {}, { runtime, actor }));
}

async function refusal(actor: Actor, input: unknown): Promise<AppError> {
  const error = await executeTool(getBalance, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

const usdc = (amount: number) => [{ asset: 'USDC', amount }];

describe('get_balance', () => {
  it('a new account has nothing available and nothing on its way out', async () => {
    const { actor } = await merchant();
    expect(await balance(actor)).toEqual({
      object: 'balance',
      livemode: false,
      available: usdc(0),
      pending_payouts: usdc(0),
    });
  });

  it('funding is available; a queued payout leaves available at once and shows as pending', async () => {
    const { actor, apiKey } = await merchant();
    await fund(app, apiKey, 1000.5);
    expect(await balance(actor)).toMatchObject({ available: usdc(1000.5), pending_payouts: usdc(0) });
    await executeTool(createPayout, { amount: 100.25, to_address: ADDRESS_A }, { runtime, actor });
    expect(await balance(actor)).toEqual({
      object: 'balance',
      livemode: false,
      available: usdc(900.25),
      pending_payouts: usdc(100.25),
    });
  });

  it('each account and mode reads only its own balance', async () => {
    const { actor, apiKey } = await merchant();
    await fund(app, apiKey, 70);
    const other = await merchant();
    expect(await balance(other.actor)).toMatchObject({ available: usdc(0) });
    expect(await balance({ ...actor, livemode: true })).toEqual({
      object: 'balance',
      livemode: true,
      available: usdc(0),
      pending_payouts: usdc(0),
    });
    expect(await balance(actor)).toMatchObject({ available: usdc(70) });
  });

  it('reads the same on the agent channel', async () => {
    const { actor, apiKey } = await merchant();
    await fund(app, apiKey, 5);
    const onAgent = await executeTool(getBalance, {}, { runtime, actor: { ...actor, channel: 'agent' } });
    expect(onAgent).toMatchObject({ kind: 'executed', decision: 'allow', output: await balance(actor) });
  });

  it('it takes no parameters: an unknown one is refused naming it; a key without payments:read is refused', async () => {
    const { actor } = await merchant();
    expect(await refusal(actor, { asset: 'USDC' })).toMatchObject({ code: 'invalid_request', param: 'asset' });
    expect((await refusal({ ...actor, scopes: new Set(['payouts:write']) }, {})).code).toBe('permission_denied');
  });
});
