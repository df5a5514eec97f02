import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSWER_WITHIN_MS } from '../src/agent/conversation.ts';
import { DEFAULT_AGENT_MODEL } from '../src/agent/models/claude-models.ts';
import { createClaudeModel } from '../src/agent/models/claude.ts';
import { createOfflinePlanner } from '../src/agent/models/offline-planner.ts';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { type FakeAnthropic, type ScriptedTurn, startFakeAnthropic } from './support/fake-anthropic.ts';
import { ADDRESS_C, fund, post } from './support/money.ts';

/**
 * Issue 32 item 2: a run that cannot act asks back and waits; the merchant answers in the same run
 * (POST /agent/runs/:id/reply). "yes" runs the proposed action once, a new amount runs it with
 * that amount, "no" cancels, silence expires, and nothing moves before the answer.
 */

let fake: FakeAnthropic;
let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let offlineApp: FastifyInstance;
let merchant: TestAccount;
let stranger: TestAccount;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  const model = createClaudeModel({
    apiKey: 'sk-ant-test',
    baseURL: fake.url,
    model: DEFAULT_AGENT_MODEL,
    maxTurns: 6,
    retry: { sleep: async (_ms, signal) => signal.throwIfAborted() },
  });
  app = await testApp(runtime, { agentModel: model });
  offlineApp = await testApp(runtime, { agentModel: createOfflinePlanner() });
  merchant = await testAccount(runtime);
  stranger = await testAccount(runtime);
  await fund(app, merchant.apiKey, 10_000);
  // A known recipient (paid before through the API): small agent payouts to it need no approval.
  await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_C });
});

afterAll(async () => {
  await fake.close();
  await chain.close();
});

const CONDITIONAL = `pay 50 USDC to ${ADDRESS_C} but only after delivery`;

/** The model asks back about the condition, proposing the payout it would make now. */
function askWithProposal(amount: number): ScriptedTurn {
  return () => ({
    stop_reason: 'tool_use',
    content: [
      {
        type: 'tool_use',
        id: 'tu_ask',
        name: 'ask_merchant',
        input: {
          question: '"only after delivery": has it been delivered? Shall I pay now?',
          proposed_calls: [{ name: 'create_payout', input: { amount, to_address: ADDRESS_C } }],
        },
      },
    ],
  });
}

const reply = (runId: string, body: unknown, key = merchant.apiKey, headers: Record<string, string> = {}) =>
  post(app, key, `/agent/runs/${runId}/reply`, body, headers);

async function agentPayouts(): Promise<{ id: string; amount_minor: bigint }[]> {
  return runtime.db
    .selectFrom('payouts')
    .select(['id', 'amount_minor'])
    .where('account_id', '=', merchant.accountId)
    .where('channel', '=', 'agent')
    .execute() as Promise<{ id: string; amount_minor: bigint }[]>;
}

interface RunBody {
  run_id: string;
  status: string;
  question: { text: string; proposed_actions: unknown[] } | null;
  actions: unknown[];
}

async function askedRun(amount = 50): Promise<RunBody> {
  fake.script([askWithProposal(amount)]);
  const res = await post(app, merchant.apiKey, '/agent/settle', { instruction: CONDITIONAL });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('a held action proposed in a clarification', () => {
  it('waits with the question and the proposed action, and nothing moves', async () => {
    const before = (await agentPayouts()).length;
    const run = await askedRun();
    expect(run.status).toBe('needs_input');
    expect(run.actions).toEqual([]);
    expect(run.question).toMatchObject({
      text: expect.stringContaining('has it been delivered?'),
      proposed_actions: [{ tool: 'create_payout', input: { amount: 50, to_address: ADDRESS_C } }],
    });
    expect(run.question?.text).toMatch(/Pay out 50\.000000 USDC to 0x3{40}/);
    expect((await agentPayouts()).length).toBe(before);
  });

  it('answered "yes" runs once: a second "yes" is 409 and a replay returns the run without running it again', async () => {
    const before = (await agentPayouts()).length;
    const run = await askedRun();
    const first = await reply(run.run_id, { message: 'yes' }, merchant.apiKey, { 'idempotency-key': 'answer-1' });
    expect(first.statusCode, first.body).toBe(200);
    const done = first.json();
    expect(done.status, done.reply).toBe('completed');
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'executed', input: { amount: 50, to_address: ADDRESS_C } },
    ]);
    expect(done.conversation.map((turn: { role: string }) => turn.role)).toEqual(['merchant', 'agent', 'merchant']);
    expect(done.question).toBeNull();

    const replayed = await reply(run.run_id, { message: 'yes' }, merchant.apiKey, { 'idempotency-key': 'answer-1' });
    expect(replayed.statusCode, replayed.body).toBe(200);
    expect(replayed.json().actions).toHaveLength(1);
    const again = await reply(run.run_id, { message: 'yes' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.message).toMatch(/not waiting for an answer \(status completed\)/);
    expect((await agentPayouts()).length).toBe(before + 1);

    // The action log records the answer, and the chain still verifies with the run's two turns.
    const logged = await runtime.db
      .selectFrom('action_log')
      .select(['entry_type', 'payload'])
      .where('run_id', '=', run.run_id)
      .orderBy('seq')
      .execute();
    expect(logged.map((row) => row.entry_type)).toEqual([
      'run.finished',
      'run.reply',
      'action.executed',
      'run.finished',
    ]);
    expect(logged[1]?.payload).toMatchObject({ message: 'yes', idempotency_key: 'answer-1' });
    const verify = await app.inject({ method: 'GET', url: '/v1/audit/verify', headers: bearer(merchant.apiKey) });
    expect(verify.json().ok, verify.body).toBe(true);
  });

  it('answered with a new amount runs with the new amount, read by the exact number reader', async () => {
    const run = await askedRun();
    const done = (await reply(run.run_id, { message: 'no, make it 2 instead' })).json();
    expect(done.status, done.reply).toBe('completed');
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'executed', input: { amount: 2, to_address: ADDRESS_C } },
    ]);
    const payout = (await agentPayouts()).find((p) => p.id === done.actions[0].result.id);
    expect(payout?.amount_minor).toBe(2_000_000n);
  });

  it('an amount that reads two ways is not taken as the new amount: it goes back to the model', async () => {
    const run = await askedRun();
    fake.script([
      (req) => {
        // The conversation continues: the answer is the next user turn, after the question.
        const messages = req.body.messages;
        expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
        expect(JSON.stringify(messages[2]?.content)).toContain('make it 5.000');
        return askWithProposal(50)(req);
      },
    ]);
    const again = (await reply(run.run_id, { message: 'make it 5.000' })).json();
    expect(again.status).toBe('needs_input');
    expect(again.actions).toEqual([]);
    expect(again.conversation).toHaveLength(4);
  });

  it('answered "no" moves nothing and the run ends cancelled', async () => {
    const before = (await agentPayouts()).length;
    const run = await askedRun();
    const done = (await reply(run.run_id, { message: 'No.' })).json();
    expect(done.status).toBe('cancelled');
    expect(done.actions).toEqual([]);
    expect((await agentPayouts()).length).toBe(before);
  });

  it('a "yes" to a proposal the merchant never wrote is judged by grounding like a first message', async () => {
    const before = (await agentPayouts()).length;
    const run = await askedRun(500);
    expect(run.status).toBe('needs_input');
    const done = (await reply(run.run_id, { message: 'yes' })).json();
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'failed', error: { code: 'ungrounded_argument', param: 'amount' } },
    ]);
    expect(done.status).toBe('failed');
    expect((await agentPayouts()).length).toBe(before);
  });

  it('on the Claude path an answer that is not yes/no/amount continues the conversation with the model', async () => {
    const run = await askedRun();
    fake.script([
      (req) => {
        expect(req.body.messages.at(-1)).toMatchObject({
          role: 'user',
          content: [{ type: 'text', text: 'delivered this morning, pay 3 USDC only' }],
        });
        return {
          stop_reason: 'tool_use',
          content: [
            { type: 'tool_use', id: 'tu_p', name: 'create_payout', input: { amount: 3, to_address: ADDRESS_C } },
          ],
        };
      },
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Paid 3 USDC.' }] }),
    ]);
    const done = (await reply(run.run_id, { message: 'delivered this morning, pay 3 USDC only' })).json();
    // The continued conversation is a request the real API accepts (roles alternate, no prefill).
    expect(fake.rejected).toEqual([]);
    // The first message's condition still holds every money call the model makes on its own: only
    // a "yes" to the proposal (or a new amount) settles it.
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'failed', error: { code: 'unclear_instruction' } },
    ]);
  });
});

describe('the offline planner asks back and reads the answer', () => {
  it('an instruction it cannot act on waits; an answer that is the whole instruction runs', async () => {
    const asked = (
      await post(offlineApp, merchant.apiKey, '/agent/settle', { instruction: 'send the usual amount to our supplier' })
    ).json();
    expect(asked.status).toBe('needs_input');
    expect(asked.question.proposed_actions).toEqual([]);
    const done = (
      await post(offlineApp, merchant.apiKey, `/agent/runs/${asked.run_id}/reply`, {
        message: `pay out 4 USDC to ${ADDRESS_C}`,
      })
    ).json();
    expect(done.status, done.reply).toBe('completed');
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'executed', input: { amount: 4, to_address: ADDRESS_C } },
    ]);

    // Finance sees the conversation on the run's page.
    const signIn = await offlineApp.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: merchant.apiKey }).toString(),
    });
    const cookie = /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))?.[0] ?? '';
    const page = await offlineApp.inject({
      method: 'GET',
      url: `/dashboard/runs/${asked.run_id}`,
      headers: { cookie },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="run-conversation"');
    expect(page.body).toContain(`pay out 4 USDC to ${ADDRESS_C}`);
  });

  it('a figure that reads two ways is asked back; the instruction written again with the exact figure runs, grounded by the answer', async () => {
    const asked = (
      await post(offlineApp, merchant.apiKey, '/agent/settle', { instruction: `pay 2.000 USDC to ${ADDRESS_C}` })
    ).json();
    expect(asked.status).toBe('needs_input');
    expect(asked.question.text).toContain('"2.000"');
    const done = (
      await post(offlineApp, merchant.apiKey, `/agent/runs/${asked.run_id}/reply`, {
        message: `sorry, pay 2 USDC to ${ADDRESS_C}`,
      })
    ).json();
    expect(done.status, done.reply).toBe('completed');
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'executed', input: { amount: 2, to_address: ADDRESS_C } },
    ]);
  });

  it('a proposed reading runs once on "yes", and with the new amount on an answer that gives one', async () => {
    const instruction = `Correction: 3 usdc not 6, to ${ADDRESS_C} for the freezer`;
    const asked = (await post(offlineApp, merchant.apiKey, '/agent/settle', { instruction })).json();
    expect(asked.status).toBe('needs_input');
    expect(asked.actions).toEqual([]);
    expect(asked.question.proposed_actions).toMatchObject([
      { tool: 'create_payout', input: { amount: 3, asset: 'USDC', to_address: ADDRESS_C } },
    ]);
    const done = (
      await post(offlineApp, merchant.apiKey, `/agent/runs/${asked.run_id}/reply`, { message: 'yes' })
    ).json();
    expect(done.status, done.reply).toBe('completed');
    expect(done.actions).toMatchObject([
      { tool: 'create_payout', status: 'executed', input: { amount: 3, to_address: ADDRESS_C } },
    ]);
    const again = (await post(offlineApp, merchant.apiKey, '/agent/settle', { instruction })).json();
    const changed = (
      await post(offlineApp, merchant.apiKey, `/agent/runs/${again.run_id}/reply`, { message: 'make it 2 usdc' })
    ).json();
    expect(changed.status, changed.reply).toBe('completed');
    expect(changed.actions).toMatchObject([{ tool: 'create_payout', status: 'executed', input: { amount: 2 } }]);
  });

  it('an answer that only completes part of it is read with the first message, whose condition still holds', async () => {
    const asked = (
      await post(offlineApp, merchant.apiKey, '/agent/settle', {
        instruction: `send 5 USDC to ${ADDRESS_C} but only after delivery`,
      })
    ).json();
    expect(asked.status).toBe('needs_input');
    const again = (
      await post(offlineApp, merchant.apiKey, `/agent/runs/${asked.run_id}/reply`, { message: 'it is urgent' })
    ).json();
    expect(again.status).toBe('needs_input');
    expect(again.actions).toEqual([]);
  });

  it('a restart keeps a waiting run: another app over the same database takes the answer', async () => {
    const asked = (
      await post(offlineApp, merchant.apiKey, '/agent/settle', { instruction: 'send the usual amount to our supplier' })
    ).json();
    const restarted = await testApp(runtime, { agentModel: createOfflinePlanner() });
    const done = (
      await post(restarted, merchant.apiKey, `/agent/runs/${asked.run_id}/reply`, { message: 'cancel' })
    ).json();
    expect(done.status).toBe('cancelled');
  });
});

describe('a replayed first request while an answer is being worked on', () => {
  it("waits for the answer's turn instead of closing the run as interrupted (the turn began at the answer)", async () => {
    // Its own runtime: a 1 s time budget, so the replay gives up waiting quickly.
    const quick = await testRuntime({ AGENT_TIMEOUT_MS: '1000' });
    const quickApp = await testApp(quick, { agentModel: createOfflinePlanner() });
    const owner = await testAccount(quick);
    const first = { instruction: 'send the usual amount to our supplier', idempotency_key: 'first-1' };
    const asked = (await post(quickApp, owner.apiKey, '/agent/settle', first)).json();
    expect(asked.status).toBe('needs_input');
    // Half an hour later the merchant answers, and that turn is still running (as if its model
    // were slow) when a client replays the first request.
    quick.clock.advance(30 * 60_000);
    await quick.db
      .updateTable('agent_runs')
      .set({ status: 'running', answer_by: null })
      .where('id', '=', asked.run_id)
      .execute();
    await quick.db
      .insertInto('agent_run_messages')
      .values({
        run_id: asked.run_id,
        seq: 2,
        account_id: owner.accountId,
        livemode: false,
        role: 'merchant',
        text: 'pay out 1 USDC to 0x3333333333333333333333333333333333333333',
        proposed: null,
        idempotency_key: null,
        created_at: quick.clock.now(),
      })
      .execute();
    const replay = await post(quickApp, owner.apiKey, '/agent/settle', first);
    expect(replay.statusCode, replay.body).toBe(409);
    const row = await quick.db
      .selectFrom('agent_runs')
      .select('status')
      .where('id', '=', asked.run_id)
      .executeTakeFirst();
    expect(row?.status).toBe('running');
  });
});

describe('POST /agent/runs/:id/reply errors', () => {
  it("another account's run is 404, a run not waiting is 409, a bad body is 400 naming the field", async () => {
    const run = await askedRun();
    const theirs = await reply(run.run_id, { message: 'yes' }, stranger.apiKey);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json().error.param).toBe('id');

    const noMessage = await reply(run.run_id, {});
    expect(noMessage.statusCode).toBe(400);
    expect(noMessage.json().error.param).toBe('message');
    const empty = await reply(run.run_id, { message: '   ' });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.param).toBe('message');
    const extra = await reply(run.run_id, { message: 'yes', approve: true });
    expect(extra.statusCode).toBe(400);

    expect((await reply(run.run_id, { message: 'cancel' })).json().status).toBe('cancelled');
    const notWaiting = await reply(run.run_id, { message: 'yes' });
    expect(notWaiting.statusCode).toBe(409);
    expect(notWaiting.json().error.type).toBe('invalid_request_error');

    // The same Idempotency-Key with another message is a conflict, not a second answer.
    const other = await askedRun();
    expect(
      (await reply(other.run_id, { message: 'no' }, merchant.apiKey, { 'idempotency-key': 'k-1' })).statusCode,
    ).toBe(200);
    const conflict = await reply(other.run_id, { message: 'yes' }, merchant.apiKey, { 'idempotency-key': 'k-1' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.type).toBe('idempotency_error');
  });
});

// Last: it moves the shared clock past every waiting run's answer_by.
describe('never answered', () => {
  it('moves nothing, and the run expires after ANSWER_WITHIN_MS; a late "yes" is 409', async () => {
    const before = (await agentPayouts()).length;
    const run = await askedRun();
    runtime.clock.advance(ANSWER_WITHIN_MS - 1000);
    const waiting = await app.inject({
      method: 'GET',
      url: `/agent/runs/${run.run_id}`,
      headers: bearer(merchant.apiKey),
    });
    expect(waiting.json().status).toBe('needs_input');
    runtime.clock.advance(1000);
    // The dashboard's list shows it expired too (it is the first to read it after the lapse).
    const signIn = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: merchant.apiKey }).toString(),
    });
    const cookie = /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))?.[0] ?? '';
    const expiredList = await app.inject({ method: 'GET', url: '/dashboard/runs?status=expired', headers: { cookie } });
    expect(expiredList.body).toContain(run.run_id);
    const listed = await app.inject({ method: 'GET', url: '/agent/runs?limit=100', headers: bearer(merchant.apiKey) });
    expect(listed.json().data.find((r: { run_id: string }) => r.run_id === run.run_id)?.status).toBe('expired');
    const late = await reply(run.run_id, { message: 'yes' });
    expect(late.statusCode).toBe(409);
    expect(late.json().error.message).toMatch(/status expired/);
    expect((await agentPayouts()).length).toBe(before);
    const verify = await app.inject({ method: 'GET', url: '/v1/audit/verify', headers: bearer(merchant.apiKey) });
    expect(verify.json().ok, verify.body).toBe(true);
  });
});
