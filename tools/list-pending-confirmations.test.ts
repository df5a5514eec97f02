import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { AppError } from '../src/core/errors.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import type { Actor } from '../src/core/tool.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { type Approver, approveConfirmation, rejectConfirmation } from '../src/pipeline/approvals.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from '../test/support/harness.ts';
import { ADDRESS_A, ADDRESS_B, ADDRESS_C, firstKeyAuth, fund } from '../test/support/money.ts';
import { createPayout } from './create-payout.ts';
import { getConfirmation } from './get-confirmation.ts';
import { listPendingConfirmations } from './list-pending-confirmations.ts';
import { TOOLS } from './registry.ts';

// Held actions come from the agent channel's default policy: a first payout to a new address waits
// for a person. A fixed clock, moved by the test, decides which holds have lapsed.
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00Z')) });
  app = await testApp(runtime);
});

async function merchant(): Promise<{ agent: Actor; approver: Approver }> {
  const account = await testAccount(runtime);
  await fund(app, account.apiKey, 100);
  const agent: Actor = { ...(await firstKeyAuth(runtime, account.accountId)), channel: 'agent' };
  const key = await issueApiKey(runtime.db, { accountId: account.accountId, livemode: false, scopes: ['approvals'] });
  return {
    agent,
    approver: { accountId: account.accountId, livemode: false, keyId: key.id, scopes: new Set(['approvals']) },
  };
}

async function held(agent: Actor, to: string): Promise<string> {
  const result = await executeTool(createPayout, { amount: 10, to_address: to }, { runtime, actor: agent });
  if (result.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${result.kind}`);
  return result.confirmation.confirmation_id;
}

async function list(actor: Actor, input: Record<string, unknown> = {}) {
  return executedOutput(await executeTool(listPendingConfirmations, input, { runtime, actor }));
}

const ids = (page: { data: { id: string }[] }): string[] => page.data.map((c) => c.id);

async function refusal(actor: Actor, input: unknown): Promise<AppError> {
  const error = await executeTool(listPendingConfirmations, input, { runtime, actor }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('list_pending_confirmations', () => {
  let agent: Actor;
  let approver: Approver;
  const holds: string[] = [];

  beforeAll(async () => {
    ({ agent, approver } = await merchant());
    // 09:00, 09:05, 09:10, 09:15: the first lapses at 09:15.
    for (const to of [ADDRESS_A, ADDRESS_B, ADDRESS_C, ADDRESS_A]) {
      if (holds.length > 0) runtime.clock.advance(5 * 60_000);
      holds.push(await held(agent, to));
    }
    // Another merchant's hold never shows.
    await held((await merchant()).agent, ADDRESS_A);
  });

  it('lists the pending holds newest first, each as get_confirmation reads it', async () => {
    const page = await list(agent);
    expect(page.object).toBe('list');
    expect(ids(page)).toEqual([holds[3], holds[2], holds[1]]);
    expect(page.has_more).toBe(false);
    for (const confirmation of page.data) {
      const {
        outcome: _o,
        error: _e,
        created_object: _c,
        ...view
      } = executedOutput(
        await executeTool(getConfirmation, { confirmation_id: confirmation.id }, { runtime, actor: agent }),
      );
      expect(confirmation).toEqual(view);
    }
    // The one made at 09:00 lapsed at 09:15, though nothing has marked it expired yet.
    const lapsed = await executeTool(getConfirmation, { confirmation_id: holds[0] }, { runtime, actor: agent });
    expect(executedOutput(lapsed).status).toBe('expired');
    expect((await list({ ...agent, livemode: true })).data).toEqual([]);
  });

  it('approved and rejected holds leave the list', async () => {
    await approveConfirmation(runtime, TOOLS, approver, holds[2]!);
    await rejectConfirmation(runtime, approver, holds[1]!);
    expect(ids(await list(agent))).toEqual([holds[3]]);
  });

  it('status lists the executed, rejected, lapsed or all holds; the default stays pending', async () => {
    // By now: holds[0] lapsed (09:00, read at 09:15), holds[2] executed, holds[1] rejected, holds[3] pending.
    expect(ids(await list(agent, { status: 'pending' }))).toEqual([holds[3]]);
    expect(ids(await list(agent, { status: 'executed' }))).toEqual([holds[2]]);
    expect(ids(await list(agent, { status: 'rejected' }))).toEqual([holds[1]]);
    expect(ids(await list(agent, { status: 'expired' }))).toEqual([holds[0]]);
    expect(ids(await list(agent, { status: 'all' }))).toEqual([...holds].reverse());
    for (const status of ['executed', 'rejected', 'expired'] as const) {
      for (const confirmation of (await list(agent, { status })).data) expect(confirmation.status).toBe(status);
    }
  });

  it('pages with limit, starting_after and ending_before', async () => {
    const { agent: paged } = await merchant();
    const mine = [await held(paged, ADDRESS_A), await held(paged, ADDRESS_B), await held(paged, ADDRESS_C)];
    const first = await list(paged, { limit: 2 });
    expect(first.has_more).toBe(true);
    expect(first.data).toHaveLength(2);
    const next = await list(paged, { limit: 2, starting_after: first.data[1]!.id });
    expect([...ids(first), ...ids(next)].sort()).toEqual([...mine].sort());
    expect(next.has_more).toBe(false);
    expect(ids(await list(paged, { ending_before: next.data[0]!.id }))).toEqual(ids(first));
  });

  it('refusals name the field: a bad limit, a cursor that is not the caller’s, an unknown field', async () => {
    const { agent: stranger } = await merchant();
    const cases: [Actor, Record<string, unknown>, string][] = [
      [agent, { limit: 0 }, 'limit'],
      [agent, { limit: 101 }, 'limit'],
      [agent, { starting_after: 'conf_unknown' }, 'starting_after'],
      [stranger, { starting_after: holds[3] }, 'starting_after'],
      [agent, { status: 'approved' }, 'status'],
      [agent, { state: 'pending' }, 'state'],
    ];
    for (const [who, input, param] of cases) {
      expect(await refusal(who, input), JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    }
    expect((await refusal({ ...agent, scopes: new Set(['approvals']) }, {})).code).toBe('permission_denied');
  });
});
