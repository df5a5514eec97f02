import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { createClaudeModel } from '../src/agent/models/claude.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { type FakeAnthropic, lastToolResults, startFakeAnthropic } from './support/fake-anthropic.ts';
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
    model: 'claude-test-model',
    maxTurns: 6,
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
    const res = await settle('pay out 20 USDC to the usual supplier');
    expect(res.statusCode, res.body).toBe(200);
    const run = res.json();
    expect(run.status).toBe('completed');
    expect(run.reply).toBe('Paid out 20 USDC.');
    expect(run.model).toBe('claude-test-model');
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
    expect(first.body.model).toBe('claude-test-model');
    expect(first.body.system[0]!.cache_control).toEqual({ type: 'ephemeral' });
    expect(first.body.system[0]!.text).toContain('enforced outside of you');
    expect(first.body.tools.at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
    const payout = first.body.tools.find((t) => t.name === 'create_payout')!;
    expect(payout.input_schema).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['amount', 'to_address']),
    });
    expect(first.body.messages[0]).toEqual({ role: 'user', content: 'pay out 20 USDC to the usual supplier' });
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
    const run = (await settle('pay 5 USDC to our supplier 0x1111111111111111111111111111111111111111')).json();
    expect(run.actions.map((a: { status: string }) => a.status)).toEqual(['failed', 'executed']);
    expect(run.status).toBe('failed');
  });

  it('a model that answers with an API error fails the run without moving money', async () => {
    fake.script([]);
    const before = await availableBalance(app, merchant.apiKey);
    const run = (await settle('pay out 1 USDC to 0x3333333333333333333333333333333333333333')).json();
    expect(run.status).toBe('failed');
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });
});
