import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import type { PayoutView } from '../src/payouts/present.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, firstKeyAuth, fund } from '../test/support/money.ts';
import { createPayout } from './create-payout.ts';
import { getPayout } from './get-payout.ts';

// Payouts need a funded test balance and the embedded devnet the runtime starts on first use.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
});

async function merchant(): Promise<Actor> {
  const account = await testAccount(runtime);
  await fund(app, account.apiKey, 100);
  return { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'api' };
}

async function refusal(actor: Actor, input: unknown): Promise<AppError> {
  const error = await executeTool(getPayout, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('get_payout', () => {
  let actor: Actor;
  let payout: PayoutView;

  beforeAll(async () => {
    actor = await merchant();
    payout = executedOutput(
      await executeTool(
        createPayout,
        { amount: 12.345678, to_address: ADDRESS_A, reference: 'r-1', memo: 'thanks' },
        { runtime, actor },
      ),
    );
  });

  it('reads the payout as create_payout returned it: queued, no transaction yet', async () => {
    const read = executedOutput(await executeTool(getPayout, { payout_id: payout.id }, { runtime, actor }));
    expect(read).toEqual(payout);
    expect(read).toMatchObject({ status: 'queued', amount: 12.345678, tx_hash: null, settled_at: null });
  });

  it('shows the transaction once the chain has settled it', async () => {
    const settledAt = new Date('2026-05-01T10:00:00Z');
    const txHash = `0x${'ab'.repeat(32)}`;
    // What the settlement worker writes once the batch is confirmed (the worker is tested in test/settlement*).
    await runtime.db
      .updateTable('payouts')
      .set({ status: 'settled', tx_hash: txHash, chain_id: 31337, gas_used: 34_400n, settled_at: settledAt })
      .where('id', '=', payout.id)
      .execute();
    expect(executedOutput(await executeTool(getPayout, { payout_id: payout.id }, { runtime, actor }))).toEqual({
      ...payout,
      status: 'settled',
      tx_hash: txHash,
      chain_id: 31337,
      gas_used: 34_400,
      settled_at: settledAt.toISOString(),
    });
  });

  it("an unknown id, another account's and the other mode's payout are the same 404 naming payout_id", async () => {
    const other = await merchant();
    for (const [who, id] of [
      [actor, 'po_unknown'],
      [other, payout.id],
      [{ ...actor, livemode: true }, payout.id],
    ] as const) {
      const error = await refusal(who, { payout_id: id });
      expect(error).toMatchObject({ code: 'not_found', param: 'payout_id' });
      expect(error.message).toBe(`No such payout: '${id}'.`);
    }
  });

  it('a missing, empty or over-long id is refused naming payout_id; a key without payments:read is refused', async () => {
    for (const input of [{}, { payout_id: '' }, { payout_id: 'p'.repeat(101) }, { payout_id: 5 }]) {
      expect(await refusal(actor, input), JSON.stringify(input)).toMatchObject({
        code: 'invalid_request',
        param: 'payout_id',
      });
    }
    const error = await refusal({ ...actor, scopes: new Set(['payouts:write']) }, { payout_id: payout.id });
    expect(error.code).toBe('permission_denied');
  });
});
