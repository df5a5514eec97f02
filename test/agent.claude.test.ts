import { DEFAULT_AGENT_MODEL } from '../src/agent/models/claude-models.ts';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { createClaudeModel } from '../src/agent/models/claude.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import {
  type FakeAnthropic,
  lastToolResults,
  overloaded,
  rateLimited,
  startFakeAnthropic,
} from './support/fake-anthropic.ts';
import { ADDRESS_A, ADDRESS_C, availableBalance, fund, post } from './support/money.ts';

let fake: FakeAnthropic;
let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  const model = createClaudeModel({
    apiKey: 'sk-ant-test',
    baseURL: fake.url,
    model: DEFAULT_AGENT_MODEL,
    maxTurns: 6,
    // Backoff is not slept in tests; a wait still ends when the run is stopped.
    retry: { sleep: async (_ms, signal) => signal.throwIfAborted() },
  });
  app = await testApp(runtime, { agentModel: model });
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 10_000);
  // A known recipient (paid before through the API) so small agent payouts need no confirmation.
  await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_C });
});

afterAll(async () => {
  await fake.close();
  await chain.close();
});

const settle = (instruction: string) => post(app, merchant.apiKey, '/agent/settle', { instruction });

describe('Claude through the real SDK against a local Messages API', () => {
  it('runs a 3-step run: read balance, pay out, final answer', async () => {
    fake.script([
      () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_1', name: 'get_balance', input: {} }] }),
      (req) => {
        const [result] = lastToolResults(req);
        expect(result?.tool_use_id).toBe('tu_1');
        expect(result?.is_error).toBeUndefined();
        expect(result?.content).toContain('"available"');
        return {
          stop_reason: 'tool_use',
          content: [
            { type: 'text', text: 'Balance is enough.' },
            { type: 'tool_use', id: 'tu_2', name: 'create_payout', input: { amount: 20, to_address: ADDRESS_C } },
          ],
        };
      },
      (req) => {
        expect(lastToolResults(req)[0]?.content).toContain('"status":"queued"');
        return { stop_reason: 'end_turn', content: [{ type: 'text', text: 'Paid out 20 USDC.' }] };
      },
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    // The recipient is in the instruction: a payout to an address from nowhere is refused (grounding).
    const res = await settle(`pay out 20 USDC to the usual supplier ${ADDRESS_C}`);
    expect(res.statusCode, res.body).toBe(200);
    const run = res.json();
    expect(run.status).toBe('completed');
    // The model's words, then the recorded actions in plain words (reads left out).
    expect(run.reply).toMatch(
      /^Paid out 20 USDC\.\n\nActions:\n- Pay out 20\.000000 USDC to 0x3{40}: done \(po_\w+, queued\)\.$/,
    );
    expect(run.model).toBe(DEFAULT_AGENT_MODEL);
    expect(run.actions.map((a: { tool: string; status: string }) => [a.tool, a.status])).toEqual([
      ['get_balance', 'executed'],
      ['create_payout', 'executed'],
    ]);
    expect(run.usage).toEqual({
      input_tokens: 300,
      output_tokens: 60,
      cache_read_input_tokens: 1800,
      cache_creation_input_tokens: 900,
    });
    expect(await availableBalance(app, merchant.apiKey)).toBe(before - 20);

    // What the SDK sent: the catalogue as tools (JSON Schema from zod), cache breakpoints on the
    // system prompt and the last tool, the API key as a bearer token.
    const first = fake.requests[0]!;
    expect(first.headers.authorization).toBe('Bearer sk-ant-test');
    expect(first.body.model).toBe(DEFAULT_AGENT_MODEL);
    expect(first.body.system[0]!.cache_control).toEqual({ type: 'ephemeral' });
    expect(first.body.system[0]!.text).toContain('enforced outside of you');
    expect(first.body.tools.at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
    const payout = first.body.tools.find((t) => t.name === 'create_payout')!;
    expect(payout.input_schema).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['amount', 'to_address']),
    });
    expect(first.body.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: expect.stringMatching(/^Current date and time \(UTC\): \d{4}-\d\d-\d\dT/) },
        { type: 'text', text: `pay out 20 USDC to the usual supplier ${ADDRESS_C}` },
      ],
    });
  });

  it('a held action ends the run confirmation_required and moves nothing', async () => {
    fake.script([
      () => ({
        stop_reason: 'tool_use',
        content: [
          { type: 'tool_use', id: 'tu_h', name: 'create_payout', input: { amount: 5000, to_address: ADDRESS_A } },
        ],
      }),
      (req) => {
        const [result] = lastToolResults(req);
        expect(result?.is_error).toBeUndefined();
        expect(result?.content).toContain('confirmation_required');
        expect(result?.content).toContain('approve_url');
        return { stop_reason: 'end_turn', content: [{ type: 'text', text: 'This payout needs approval.' }] };
      },
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle('pay out 5000 USDC to 0x1111111111111111111111111111111111111111')).json();
    expect(run.status).toBe('confirmation_required');
    expect(run.confirmations).toHaveLength(1);
    expect(run.confirmations[0].approve_url).toContain(run.confirmations[0].id);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('returns tool errors as is_error so the model can correct itself', async () => {
    fake.script([
      () => ({
        stop_reason: 'tool_use',
        content: [{ type: 'tool_use', id: 'tu_e', name: 'create_payout', input: { amount: 5, to_address: '0x123' } }],
      }),
      (req) => {
        const [result] = lastToolResults(req);
        expect(result?.is_error).toBe(true);
        expect(result?.content).toContain('to_address must be a 0x EVM address');
        return {
          stop_reason: 'tool_use',
          content: [
            { type: 'tool_use', id: 'tu_f', name: 'create_payout', input: { amount: 5, to_address: ADDRESS_C } },
          ],
        };
      },
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done after fixing the address.' }] }),
    ]);
    const run = (await settle(`pay 5 USDC to our supplier ${ADDRESS_C}`)).json();
    expect(run.actions.map((a: { status: string }) => a.status)).toEqual(['failed', 'executed']);
    // Issue 32: the run says what moved. The fixed payout is the action's final state; `failed`
    // here would invite a client to retry and pay twice.
    expect(run.status).toBe('completed');
  });

  it('a model that answers with an API error fails the run without moving money', async () => {
    fake.script([]);
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle('pay out 1 USDC to 0x3333333333333333333333333333333333333333')).json();
    expect(run.status).toBe('failed');
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('a reply cut at max_tokens is not completed, and runs none of the tool calls in it', async () => {
    fake.script([
      () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_b', name: 'get_balance', input: {} }] }),
      () => ({
        stop_reason: 'max_tokens',
        content: [
          { type: 'text', text: 'I will now pay out 50 USDC to' },
          { type: 'tool_use', id: 'tu_p', name: 'create_payout', input: { amount: 50, to_address: ADDRESS_C } },
        ],
      }),
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    const res = await settle('pay out 50 USDC to the usual supplier');
    expect(res.statusCode, res.body).toBe(200);
    const run = res.json();
    // Depends on the runtime mapping AgentModelResult.incomplete (max_tokens → failed).
    expect(run.status).toBe('failed');
    expect(run.reply).not.toContain('I will now pay out');
    expect(run.actions.map((a: { tool: string }) => a.tool)).toEqual(['get_balance']);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
    expect(fake.requests).toHaveLength(2);
  });

  it('a refusal stop is not completed: the run is rejected', async () => {
    fake.script([
      () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_b', name: 'get_balance', input: {} }] }),
      () => ({ stop_reason: 'refusal', content: [] }),
    ]);
    const run = (await settle('pay out everything to 0x3333333333333333333333333333333333333333')).json();
    // Depends on the runtime mapping AgentModelResult.incomplete (refusal → rejected).
    expect(run.status).toBe('rejected');
    expect(run.actions.map((a: { tool: string }) => a.tool)).toEqual(['get_balance']);
  });

  it('retries 429 and 529 answers and completes the run', async () => {
    fake.script([
      rateLimited(1),
      overloaded(),
      () => ({
        stop_reason: 'tool_use',
        content: [{ type: 'tool_use', id: 'tu_p', name: 'create_payout', input: { amount: 2, to_address: ADDRESS_C } }],
      }),
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Paid out 2 USDC.' }] }),
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    // The recipient is in the instruction (grounding); the reply ends with the recorded actions.
    const run = (await settle(`pay out 2 USDC to the usual supplier ${ADDRESS_C}`)).json();
    expect(run.status).toBe('completed');
    expect(run.reply).toMatch(
      /^Paid out 2 USDC\.\n\nActions:\n- Pay out 2\.000000 USDC to 0x3{40}: done \(po_\w+, queued\)\.$/,
    );
    expect(run.actions.map((a: { status: string }) => a.status)).toEqual(['executed']);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before - 2);
    expect(fake.requests).toHaveLength(4);
    // Only the answered turns count in usage.
    expect(run.usage.input_tokens).toBe(200);
  });

  it('runs two tool_use blocks of one message in order and answers both in one user message', async () => {
    fake.script([
      () => ({
        stop_reason: 'tool_use',
        content: [
          { type: 'tool_use', id: 'tu_1', name: 'get_balance', input: {} },
          { type: 'tool_use', id: 'tu_2', name: 'create_payout', input: { amount: 3, to_address: ADDRESS_C } },
        ],
      }),
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Checked, then paid 3 USDC.' }] }),
    ]);
    const run = (await settle(`check the balance, then pay out 3 USDC to the usual supplier ${ADDRESS_C}`)).json();
    expect(run.status).toBe('completed');
    expect(run.actions.map((a: { tool: string; status: string }) => [a.tool, a.status])).toEqual([
      ['get_balance', 'executed'],
      ['create_payout', 'executed'],
    ]);
    const second = fake.requests[1]!;
    expect(second.body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const results = lastToolResults(second);
    expect(results.map((r) => r.tool_use_id)).toEqual(['tu_1', 'tu_2']);
    expect(results[0]!.content).toContain('"available"');
    expect(results[1]!.content).toContain('"status":"queued"');
    expect(fake.rejected).toEqual([]);
  });

  it('judges the money calls of one message together: two 600 USDC payouts are one 1,200 USDC decision', async () => {
    fake.script([
      () => ({
        stop_reason: 'tool_use',
        content: [
          { type: 'tool_use', id: 'tu_1', name: 'create_payout', input: { amount: 600, to_address: ADDRESS_C } },
          { type: 'tool_use', id: 'tu_2', name: 'create_payout', input: { amount: 600, to_address: ADDRESS_C } },
        ],
      }),
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Both payouts wait for approval.' }] }),
    ]);
    // (Not "600 USDC … twice": a multiplier is asked back before any money call, issue 32.)
    const run = (
      await settle(`pay out 600 USDC to ${ADDRESS_C} for invoice 7 and 600 USDC to ${ADDRESS_C} for invoice 8`)
    ).json();
    expect(run.status).toBe('confirmation_required');
    expect(run.actions.map((a: { status: string }) => a.status)).toEqual(['held', 'held']);
  });
});

/** Scripts one money call, then a final answer that says what the model saw. */
function scriptMoneyCall(name: string, input: Record<string, unknown>, seen: (content: string) => void = () => {}) {
  fake.script([
    () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_m', name, input }] }),
    (req) => {
      seen(lastToolResults(req)[0]?.content ?? '');
      return { stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done.' }] };
    },
  ]);
}

describe('issue 32: the same guarantees whatever the model says', () => {
  it('a payout on "… but only after delivery" is refused before it runs, and nothing moves', async () => {
    let seen = '';
    scriptMoneyCall('create_payout', { amount: 50, to_address: ADDRESS_C }, (content) => {
      seen = content;
    });
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle(`send 50 USDC to ${ADDRESS_C} but only after delivery`)).json();
    expect(seen).toContain('unclear_instruction');
    expect(seen).toContain('only');
    expect(run.actions).toMatchObject([
      { tool: 'create_payout', status: 'failed', error: { code: 'unclear_instruction' } },
    ]);
    expect(run.status).toBe('failed');
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('"don\'t actually send …" and "… wait until Friday" hold the money call too', async () => {
    for (const instruction of [
      `don't actually send 5 USDC to ${ADDRESS_C}, just testing`,
      `send 5 USDC to ${ADDRESS_C} but wait until Friday`,
    ]) {
      scriptMoneyCall('create_payout', { amount: 5, to_address: ADDRESS_C });
      const run = (await settle(instruction)).json();
      expect(run.actions[0]?.error?.code, instruction).toBe('unclear_instruction');
      expect(run.status, instruction).toBe('failed');
    }
  });

  it('a USDC payout grounded only by a naira figure is refused', async () => {
    scriptMoneyCall('create_payout', { amount: 50_000, to_address: ADDRESS_C });
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle(`the client paid us ₦50,000 yesterday; send the supplier ${ADDRESS_C} his share`)).json();
    expect(run.actions).toMatchObject([
      { tool: 'create_payout', status: 'failed', error: { code: 'ungrounded_argument', param: 'amount' } },
    ]);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
    // The same figure in USDC grounds the same payout.
    scriptMoneyCall('create_payout', { amount: 5, to_address: ADDRESS_C });
    expect((await settle(`send the supplier ${ADDRESS_C} 5 USDC`)).json().status).toBe('completed');
  });

  it('a payout read from an exponent ("1e3") or a look-alike ("1O0") is refused, whatever amount the model read', async () => {
    for (const [written, amount] of [
      ['1e3', 1000],
      ['1e3', 1],
      ['1O0', 100],
    ] as const) {
      scriptMoneyCall('create_payout', { amount, to_address: ADDRESS_C });
      const run = (await settle(`pay ${written} USDC to ${ADDRESS_C}`)).json();
      expect(run.actions[0]?.error?.code, `${written} as ${amount}`).toBe('unclear_instruction');
      expect(run.actions[0]?.error?.message).toContain(`"${written} USDC"`);
    }
  });

  it('in a correction only the corrected amount grounds', async () => {
    scriptMoneyCall('create_payout', { amount: 3, to_address: ADDRESS_C });
    const first = (await settle(`send 3 usdc to ${ADDRESS_C}… no make it 2`)).json();
    expect(first.actions[0]).toMatchObject({ status: 'failed', error: { code: 'ungrounded_argument' } });
    scriptMoneyCall('create_payout', { amount: 2, to_address: ADDRESS_C });
    expect((await settle(`send 3 usdc to ${ADDRESS_C}… no make it 2`)).json().status).toBe('completed');
  });

  it('a model that reads and then asks back leaves the run waiting for the answer, with its question, and nothing moves', async () => {
    fake.script([
      () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_r', name: 'get_balance', input: {} }] }),
      (req) => {
        expect(req.body.tools[0]?.name).toBe('ask_merchant');
        return {
          stop_reason: 'tool_use',
          content: [
            {
              type: 'tool_use',
              id: 'tu_q',
              name: 'ask_merchant',
              input: { question: 'Which supplier do you mean: 0x3333… or another address?' },
            },
          ],
        };
      },
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle('pay the usual supplier 5 USDC')).json();
    expect(run.status).toBe('needs_input');
    expect(run.question).toMatchObject({ text: expect.stringContaining('Which supplier'), proposed_actions: [] });
    expect(run.reply).toContain('Which supplier do you mean');
    expect(run.actions.map((a: { tool: string }) => a.tool)).toEqual(['get_balance']);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });
});
