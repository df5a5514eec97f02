import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { type Approver, approveConfirmation, rejectConfirmation } from '../src/pipeline/approvals.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, firstKeyAuth, fund } from '../test/support/money.ts';
import { createPayout } from './create-payout.ts';
import { getConfirmation } from './get-confirmation.ts';
import { getPayout } from './get-payout.ts';
import { TOOLS } from './registry.ts';

// Held actions come from the agent channel's default policy: a first payout to a new address waits
// for a person. Payouts need the embedded devnet the runtime starts on first use.
const NOW = '2026-05-01T09:00:00.000Z';
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date(NOW)) });
  app = await testApp(runtime);
});

/** An agent acting with the account's first key, and a person holding another key that may approve. */
async function merchant(funds: number): Promise<{ agent: Actor; approver: Approver }> {
  const account = await testAccount(runtime);
  if (funds > 0) await fund(app, account.apiKey, funds);
  const agent: Actor = { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'agent' };
  const key = await issueApiKey(runtime.db, { accountId: account.accountId, livemode: false, scopes: ['approvals'] });
  return {
    agent,
    approver: { accountId: account.accountId, livemode: false, keyId: key.id, scopes: new Set(['approvals']) },
  };
}

/** A first payout to ADDRESS_A on the agent channel: held. Returns the confirmation id. */
async function held(agent: Actor): Promise<string> {
  const result = await executeTool(createPayout, { amount: 10, to_address: ADDRESS_A }, { runtime, actor: agent });
  if (result.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${result.kind}`);
  return result.confirmation.confirmation_id;
}

async function read(actor: Actor, id: string) {
  return executedOutput(await executeTool(getConfirmation, { confirmation_id: id }, { runtime, actor }));
}

async function refusal(actor: Actor, input: unknown): Promise<AppError> {
  const error = await executeTool(getConfirmation, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('get_confirmation', () => {
  it('a pending hold: what it would do, why, where to approve it, and that nothing moved', async () => {
    const { agent } = await merchant(0);
    const id = await held(agent);
    const view = await read(agent, id);
    const approveUrl = `${runtime.config.publicBaseUrl}/dashboard/confirmations/${id}`;
    const expiresAt = '2026-05-01T09:15:00.000Z';
    expect(view).toEqual({
      id,
      object: 'confirmation',
      status: 'pending',
      tool: 'create_payout',
      channel: 'agent',
      summary: `Pay out 10.000000 USDC to ${ADDRESS_A}`,
      input: { amount: 10, asset: 'USDC', to_address: ADDRESS_A },
      reasons: expect.arrayContaining([
        expect.objectContaining({ rule: 'first_payout', outcome: 'require_confirmation' }),
      ]),
      approve_url: approveUrl,
      requested_by_key: agent.keyId,
      decided_by_key: null,
      expires_at: expiresAt,
      created: NOW,
      decided_at: null,
      result: null,
      outcome: `Waiting for a person to approve or reject it at ${approveUrl} before ${expiresAt}; nothing has moved yet. Ask again later to learn how it ended.`,
      error: null,
      created_object: null,
    });
  });

  it('approved and executed: what it created, with that object’s status now', async () => {
    const { agent, approver } = await merchant(100);
    const id = await held(agent);
    runtime.clock.advance(60_000);
    await approveConfirmation(runtime, TOOLS, approver, id);
    const view = await read(agent, id);
    const payoutId = (view.result as { id: string }).id;
    expect(view).toMatchObject({
      status: 'executed',
      decided_by_key: approver.keyId,
      decided_at: '2026-05-01T09:01:00.000Z',
      error: null,
      created_object: { id: payoutId, object: 'payout', status: 'queued' },
      outcome: `Approved at 2026-05-01T09:01:00.000Z and executed: it created payout ${payoutId} (queued now).`,
    });
    expect(view.result).toEqual(
      executedOutput(await executeTool(getPayout, { payout_id: payoutId }, { runtime, actor: agent })),
    );
  });

  it('an approved run that failed: the error, and it still waits (nothing moved)', async () => {
    // No funds: the approved payout runs and is refused for insufficient funds.
    const { agent, approver } = await merchant(0);
    const id = await held(agent);
    await expect(approveConfirmation(runtime, TOOLS, approver, id)).rejects.toMatchObject({
      code: 'insufficient_funds',
    });
    const view = await read(agent, id);
    expect(view).toMatchObject({
      status: 'pending',
      error: { type: 'insufficient_funds', code: 'insufficient_funds', message: expect.stringContaining('balance') },
      created_object: null,
    });
    expect(view.outcome).toMatch(
      /^An approval ran and failed \(The balance is too low.*\); nothing moved, and it still waits/,
    );
  });

  it('rejected: says so, and nothing was created', async () => {
    const { agent, approver } = await merchant(100);
    const id = await held(agent);
    await rejectConfirmation(runtime, approver, id);
    const view = await read(agent, id);
    expect(view).toMatchObject({
      status: 'rejected',
      decided_by_key: approver.keyId,
      created_object: null,
      error: null,
    });
    expect(view.outcome).toBe(`Rejected by a person at ${view.decided_at}: nothing moved.`);
  });

  it("an unknown id, another account's and the other mode's hold are the same 404 naming confirmation_id", async () => {
    const { agent } = await merchant(0);
    const id = await held(agent);
    const { agent: stranger } = await merchant(0);
    for (const [who, asked] of [
      [agent, 'conf_unknown'],
      [stranger, id],
      [{ ...agent, livemode: true }, id],
    ] as const) {
      const error = await refusal(who, { confirmation_id: asked });
      expect(error).toMatchObject({ code: 'not_found', param: 'confirmation_id' });
      expect(error.message).toBe(`No such confirmation: '${asked}'.`);
    }
  });

  it('a missing or empty id is refused naming confirmation_id; a key without payments:read is refused', async () => {
    const { agent } = await merchant(0);
    for (const input of [{}, { confirmation_id: '' }, { confirmation_id: 'c'.repeat(101) }]) {
      expect(await refusal(agent, input), JSON.stringify(input)).toMatchObject({
        code: 'invalid_request',
        param: 'confirmation_id',
      });
    }
    const error = await refusal({ ...agent, scopes: new Set(['payouts:write']) }, { confirmation_id: 'conf_x' });
    expect(error.code).toBe('permission_denied');
  });

  // Last: it moves the file's clock past every hold made so far.
  it('lapsed: nobody decided within 15 minutes, so it is expired though the row still says pending', async () => {
    const { agent } = await merchant(0);
    const id = await held(agent);
    const expiresAt = (await read(agent, id)).expires_at;
    runtime.clock.advance(15 * 60_000);
    const view = await read(agent, id);
    expect(view).toMatchObject({ status: 'expired', created_object: null, error: null });
    expect(view.outcome).toBe(
      `Nobody decided before ${expiresAt}, so it lapsed: nothing moved. Make the call again if it is still wanted.`,
    );
  });
});
