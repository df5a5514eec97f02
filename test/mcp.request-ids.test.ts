import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { settlesBeforeHang } from './support/hang.ts';
import { ADDRESS_A, ADDRESS_B, availableBalance, fund, post } from './support/money.ts';
import { MCP_ACCEPT, openInjectedMcpSession } from './support/mcp.ts';

/**
 * MCP money answers are never lost or crossed (issue 33, item 2): a JSON-RPC id is unique only
 * while in flight, so a second request with an id in flight in the session is refused before it
 * runs, every request that ran gets its own answer, and a request reusing an id after its answer
 * came is a new call (not a replay of the old answer, not an idempotency error).
 */

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
}, 60_000);

afterAll(async () => {
  await chain.close();
});

const payoutsOf = (accountId: string) =>
  runtime.db
    .selectFrom('payouts')
    .select(['id', 'amount_minor'])
    .where('account_id', '=', accountId)
    .where('channel', '=', 'mcp')
    .orderBy('created_at')
    .execute();

/** An account holding 100 USDC that has paid both addresses before (the new-recipient rule stays out of the way). */
async function payingAccount() {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, 100);
  for (const address of [ADDRESS_A, ADDRESS_B]) {
    expect((await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: address })).statusCode).toBe(200);
  }
  return { ...m, session: await openInjectedMcpSession(app, m.apiKey) };
}

function payout(session: Record<string, string>, id: number, args: Record<string, unknown>, name = 'create_payout') {
  return app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { ...session, accept: MCP_ACCEPT },
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args },
    }),
  });
}

interface RpcMessage {
  id: unknown;
  result: { isError?: boolean; structuredContent: Record<string, unknown> };
}

/** The JSON-RPC messages of an answer, sent as JSON or as server-sent events. */
function messagesOf(res: LightMyRequestResponse): RpcMessage[] {
  if (String(res.headers['content-type']).startsWith('application/json')) return [res.json()];
  return res.body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)));
}

/**
 * Holds the next money call in its precheck (the chain is asked who the contracts are) until
 * released, so a second request can arrive while the first is certainly in flight.
 */
function holdNextChainCall(): { entered: Promise<void>; release: () => void; restore: () => void } {
  const original = runtime.chain;
  let entered!: () => void;
  let release!: () => void;
  const enteredPromise = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = false;
  runtime.chain = async () => {
    if (!held) {
      held = true;
      entered();
      await gate;
    }
    return original.call(runtime);
  };
  return { entered: enteredPromise, release, restore: () => (runtime.chain = original) };
}

describe('two requests with one id in one session', () => {
  it('the second is refused before it runs; the first gets its own answer; the refused one, retried, pays once', async () => {
    const m = await payingAccount();
    const gate = holdNextChainCall();
    try {
      const first = payout(m.session, 7, { amount: 2, to_address: ADDRESS_A, idempotency_key: 'call-first' });
      await gate.entered;
      const second = await payout(m.session, 7, { amount: 3, to_address: ADDRESS_B, idempotency_key: 'call-second' });
      expect(second.statusCode, second.body).toBe(409);
      expect(second.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
      expect(second.json().error.message).toContain('still in flight');
      expect(await payoutsOf(m.accountId)).toEqual([]);

      gate.release();
      const answered = await settlesBeforeHang(first);
      expect(answered.settled).toBe(true);
      if (!answered.settled) return;
      const [answer] = messagesOf(answered.value);
      expect(answer).toMatchObject({ id: 7 });
      expect(answer!.result.structuredContent).toMatchObject({ object: 'payout', amount: 2, to_address: ADDRESS_A });
      expect((await payoutsOf(m.accountId)).map((p) => p.amount_minor)).toEqual([2_000_000n]);
    } finally {
      gate.restore();
    }

    // The refused caller retries (id 7 is free again: its answer came) with its key: it runs once.
    const retried = await payout(m.session, 7, { amount: 3, to_address: ADDRESS_B, idempotency_key: 'call-second' });
    const [retryAnswer] = messagesOf(retried);
    expect(retryAnswer!.result.structuredContent).toMatchObject({ object: 'payout', amount: 3, to_address: ADDRESS_B });
    const again = await payout(m.session, 8, { amount: 3, to_address: ADDRESS_B, idempotency_key: 'call-second' });
    expect(messagesOf(again)[0]!.result.structuredContent.id).toBe(retryAnswer!.result.structuredContent.id);
    expect((await payoutsOf(m.accountId)).map((p) => p.amount_minor)).toEqual([2_000_000n, 3_000_000n]);
    expect(await availableBalance(app, m.apiKey)).toBe(93);
  });
});

describe('an id reused after its answer came', () => {
  it('is a new call: the same payout again runs again, and other parameters run too', async () => {
    const m = await payingAccount();
    const args = { amount: 2, to_address: ADDRESS_B };
    const first = messagesOf(await payout(m.session, 42, args))[0]!;
    const reused = messagesOf(await payout(m.session, 42, args))[0]!;
    expect(first.result.isError).toBeFalsy();
    expect(reused.result.isError).toBeFalsy();
    expect(reused.result.structuredContent.id).not.toBe(first.result.structuredContent.id);

    const other = messagesOf(await payout(m.session, 42, { amount: 5, to_address: ADDRESS_B }))[0]!;
    expect(other.result.isError, JSON.stringify(other)).toBeFalsy();
    expect(other.result.structuredContent).toMatchObject({ object: 'payout', amount: 5 });
    expect((await payoutsOf(m.accountId)).map((p) => p.amount_minor)).toEqual([2_000_000n, 2_000_000n, 5_000_000n]);
    expect(await availableBalance(app, m.apiKey)).toBe(89);
  });
  it("is a new agent run too; only the client's idempotency_key replays one", async () => {
    const m = await payingAccount();
    const agentPayouts = async () =>
      (
        await runtime.db
          .selectFrom('payouts')
          .select('id')
          .where('account_id', '=', m.accountId)
          .where('channel', '=', 'agent')
          .execute()
      ).length;
    const instruction = { instruction: `pay out 2 USDC to ${ADDRESS_B}` };
    const first = messagesOf(await payout(m.session, 5, instruction, 'agent_settle'))[0]!;
    const reused = messagesOf(await payout(m.session, 5, instruction, 'agent_settle'))[0]!;
    expect(first.result.structuredContent, JSON.stringify(first)).toMatchObject({ status: 'completed' });
    expect(reused.result.structuredContent, JSON.stringify(reused)).toMatchObject({ status: 'completed' });
    // A key derived from the session and the id handed the second call the first run's answer.
    expect(reused.result.structuredContent.run_id).not.toBe(first.result.structuredContent.run_id);
    expect(await agentPayouts()).toBe(2);

    const keyed = { ...instruction, idempotency_key: 'agent-once' };
    const once = messagesOf(await payout(m.session, 6, keyed, 'agent_settle'))[0]!;
    const replayed = messagesOf(await payout(m.session, 7, keyed, 'agent_settle'))[0]!;
    expect(replayed.result.structuredContent.run_id).toBe(once.result.structuredContent.run_id);
    expect(await agentPayouts()).toBe(3);
  });
});
