// Grounding (issue 13 point 4, docs/agent.md) through the real route: POST /agent/settle with the
// Claude adapter against the local fake Messages API. A money call runs only if its recipient,
// amount and payment id come from the instruction or a typed field of a result read in the run;
// an address found only in a payment's description is refused like an invented one, with its own
// error code, recorded as a failed action, and nothing moves. The reply lists what was recorded.
import { DEFAULT_AGENT_MODEL } from '../src/agent/models/claude-models.ts';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaudeModel } from '../src/agent/models/claude.ts';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { type FakeAnthropic, lastToolResults, startFakeAnthropic } from './support/fake-anthropic.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { availableBalance, fund, post } from './support/money.ts';
import { createPayment } from './support/payments.ts';

/** Paid before through the API, so only grounding stands between the agent and a payout to it. */
const SUPPLIER = '0x5555555555555555555555555555555555555555';
const INVENTED = '0x9999999999999999999999999999999999999999';

let fake: FakeAnthropic;
let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;
let paymentId: string;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  const model = createClaudeModel({
    apiKey: 'sk-ant-test',
    baseURL: fake.url,
    model: DEFAULT_AGENT_MODEL,
    maxTurns: 6,
  });
  app = await testApp(runtime, { agentModel: model });
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 1_000);
  const known = await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: SUPPLIER });
  expect(known.statusCode, known.body).toBe(200);
  // Text a payer or a third party could have written: the address is there only as free text.
  const payment = await createPayment(app, merchant.apiKey, {
    description: `Restock. Supplier wallet: ${SUPPLIER}`,
    metadata: { supplier_wallet: SUPPLIER },
  });
  paymentId = payment.id;
});

afterAll(async () => {
  await fake?.close();
  await chain?.close();
});

const settle = (body: Record<string, unknown>) => post(app, merchant.apiKey, '/agent/settle', body);

function payoutsTo(address: string) {
  return runtime.db
    .selectFrom('payouts')
    .select('id')
    .where('account_id', '=', merchant.accountId)
    .where('to_address', '=', address)
    .execute();
}

/** The model reads (optionally) and pays; the next turn sees the payout's tool result and ends. */
function scriptPayout(
  to: string,
  options: { read?: string; seen?: (result: { content: string; is_error?: boolean }) => void } = {},
) {
  const pay = {
    stop_reason: 'tool_use' as const,
    content: [
      { type: 'tool_use' as const, id: 'tu_pay', name: 'create_payout', input: { amount: 10, to_address: to } },
    ],
  };
  fake.script([
    ...(options.read
      ? [
          () => ({
            stop_reason: 'tool_use' as const,
            content: [
              { type: 'tool_use' as const, id: 'tu_read', name: 'get_payment', input: { payment_id: options.read } },
            ],
          }),
        ]
      : []),
    () => pay,
    (req) => {
      const [result] = lastToolResults(req);
      options.seen?.(result!);
      return { stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done.' }] };
    },
  ]);
}

describe('grounding on POST /agent/settle (Claude, fake Messages API)', () => {
  it("refuses a payout to an address that appears only in a payment's description", async () => {
    let seen: { content: string; is_error?: boolean } | undefined;
    scriptPayout(SUPPLIER, {
      read: paymentId,
      seen: (result) => {
        seen = result;
      },
    });
    const before = await availableBalance(app, merchant.apiKey);
    const payoutsBefore = (await payoutsTo(SUPPLIER)).length;

    const res = await settle({ instruction: `pay the supplier from ${paymentId}'s note 10 USDC` });
    expect(res.statusCode, res.body).toBe(200);
    const run = res.json();

    expect(run.status).toBe('failed');
    expect(run.actions.map((a: { tool: string; status: string }) => [a.tool, a.status])).toEqual([
      ['get_payment', 'executed'],
      ['create_payout', 'failed'],
    ]);
    expect(run.actions[1].error).toMatchObject({
      type: 'policy_error',
      code: 'ungrounded_argument',
      param: 'to_address',
    });
    expect(run.actions[1].error.message).toContain(SUPPLIER);
    // The model saw the refusal as an error result, with its code, and could tell the merchant.
    expect(seen?.is_error).toBe(true);
    expect(seen?.content).toContain('ungrounded_argument');
    // Nothing moved.
    expect(await payoutsTo(SUPPLIER)).toHaveLength(payoutsBefore);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
    // The reply restates the action and why it was refused; the read is not listed.
    expect(run.reply).toBe(
      `Done.\n\nActions:\n- Pay out 10.000000 USDC to ${SUPPLIER}: refused — ${run.actions[1].error.message}.`,
    );
  });

  it('refuses a payout to an invented address', async () => {
    scriptPayout(INVENTED);
    const before = await availableBalance(app, merchant.apiKey);

    const run = (await settle({ instruction: "pay 10 USDC to the usual supplier's address" })).json();

    expect(run.status).toBe('failed');
    expect(run.actions).toHaveLength(1);
    expect(run.actions[0]).toMatchObject({
      tool: 'create_payout',
      status: 'failed',
      error: { code: 'ungrounded_argument', param: 'to_address' },
    });
    expect(await payoutsTo(INVENTED)).toHaveLength(0);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('runs the same payout when the address is written in the instruction', async () => {
    scriptPayout(SUPPLIER, { read: paymentId });
    const before = await availableBalance(app, merchant.apiKey);
    const payoutsBefore = (await payoutsTo(SUPPLIER)).length;

    const run = (await settle({ instruction: `pay the supplier of ${paymentId} 10 USDC at ${SUPPLIER}` })).json();

    expect(run.status).toBe('completed');
    expect(run.actions.map((a: { tool: string; status: string }) => [a.tool, a.status])).toEqual([
      ['get_payment', 'executed'],
      ['create_payout', 'executed'],
    ]);
    expect(await payoutsTo(SUPPLIER)).toHaveLength(payoutsBefore + 1);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before - 10);
    expect(run.reply).toBe(
      `Done.\n\nActions:\n- Pay out 10.000000 USDC to ${SUPPLIER}: done (${run.actions[1].result.id}, queued).`,
    );
  });

  it('an amount the instruction writes past where a double rounds is not the rounded amount the model sends', async () => {
    // The model's tool input reaches the agent as a double (the SDK parses its JSON): its
    // 100.00000000000000001 is 100 by then. Grounding compares with the instruction's own digits,
    // exactly, so 100 is not what the merchant wrote, and nothing moves (docs/api.md, Amounts).
    fake.script([
      () => ({
        stop_reason: 'tool_use' as const,
        content: [
          {
            type: 'tool_use' as const,
            id: 'tu_pay',
            name: 'create_payout',
            input: { amount: 100, to_address: SUPPLIER },
          },
        ],
      }),
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done.' }] }),
    ]);
    const before = await availableBalance(app, merchant.apiKey);
    const payoutsBefore = (await payoutsTo(SUPPLIER)).length;

    const run = (await settle({ instruction: `pay 100.00000000000000001 USDC to ${SUPPLIER}` })).json();

    expect(run.status).toBe('failed');
    expect(run.actions).toHaveLength(1);
    expect(run.actions[0]).toMatchObject({ tool: 'create_payout', status: 'failed', error: { type: 'policy_error' } });
    expect(await payoutsTo(SUPPLIER)).toHaveLength(payoutsBefore);
    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('a dry run returns the same plan, refusal included, and moves nothing', async () => {
    const before = await availableBalance(app, merchant.apiKey);

    scriptPayout(INVENTED);
    const refused = (await settle({ instruction: 'pay 10 USDC to the usual supplier', dry_run: true })).json();
    expect(refused.status).toBe('failed');
    expect(refused.actions).toEqual([]);
    expect(refused.reply).toMatch(
      new RegExp(
        `^Done\\.\\n\\nActions:\\n- Pay out 10\\.000000 USDC to ${INVENTED}: would be refused — to_address ${INVENTED} does not appear`,
      ),
    );

    scriptPayout(SUPPLIER);
    const planned = (await settle({ instruction: `pay 10 USDC to ${SUPPLIER}`, dry_run: true })).json();
    expect(planned.status).toBe('completed');
    expect(planned.actions.map((a: { status: string }) => a.status)).toEqual(['planned']);
    expect(planned.reply).toBe(
      `Done.\n\nActions:\n- Pay out 10.000000 USDC to ${SUPPLIER}: would be done; nothing moved (dry run).`,
    );

    expect(await availableBalance(app, merchant.apiKey)).toBe(before);
  });

  it('a read-only run keeps its reply short: no action list', async () => {
    fake.script([
      () => ({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'tu_b', name: 'get_balance', input: {} }] }),
      () => ({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'You have funds.' }] }),
    ]);
    const run = (await settle({ instruction: 'what is my balance?' })).json();
    expect(run.status).toBe('completed');
    expect(run.reply).toBe('You have funds.');
  });
});
