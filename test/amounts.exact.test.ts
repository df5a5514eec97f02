import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { changedTables, stateFingerprint } from './support/fuzz.ts';
import { MCP_ACCEPT, openInjectedMcpSession } from './support/mcp.ts';
import { ADDRESS_A, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';

/**
 * An amount is read from the digits the caller wrote, never through a double (issue 33, point 3;
 * docs/api.md, Amounts). `100.00000000000000001` is 100 as a double: it once moved 100 on every
 * money route while `1.0000001` was refused, so the rule "no more decimal places than the currency
 * has" depended on where a double happens to round. Each case is sent as raw JSON text, on every
 * route and MCP tool that takes an amount, and must be a 400 naming the field that moves nothing.
 */
let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;
let paidPaymentId: string;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 10_000);
  const payment = await createPayment(app, merchant.apiKey, { amount: 5000, currency: 'NGN' });
  expect((await payPayment(app, merchant.apiKey, payment.id)).statusCode).toBe(200);
  paidPaymentId = payment.id;
  // A first payout over the API: the MCP channel's new-recipient rule stays out of the way.
  expect((await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_A })).statusCode).toBe(200);
});

/** Amount texts a double would take for an amount the currency can hold, each with the rule it breaks. */
const REFUSED: Array<[string, RegExp]> = [
  ['100.00000000000000001', /decimal places/],
  ['1.0000000000000000000000000001', /decimal places/],
  ['999999999.9999999999', /decimal places/],
  ['1e3', /without an exponent/],
  ['5e-1', /without an exponent/],
  ['1.5e1', /without an exponent/],
  ['1E2', /without an exponent/],
  ['1e400', /without an exponent/],
];

/** Every money route, with a body around the amount text. */
const ROUTES: Array<[string, () => string, (amount: string) => string]> = [
  [
    'POST /v1/payments',
    () => '/v1/payments',
    (amount) => `{"amount":${amount},"currency":"USDC","redirect_url":"https://shop.example/thanks"}`,
  ],
  ['POST /v1/payouts', () => '/v1/payouts', (amount) => `{"amount":${amount},"to_address":"${ADDRESS_A}"}`],
  ['POST /v1/payments/:id/refunds', () => `/v1/payments/${paidPaymentId}/refunds`, (amount) => `{"amount":${amount}}`],
  [
    'POST /v1/revenue_shares',
    () => '/v1/revenue_shares',
    (amount) => `{"amount":${amount},"splits":[{"to_address":"${ADDRESS_A}","share_bps":10000}]}`,
  ],
  ['POST /v1/test_helpers/balance/fund', () => '/v1/test_helpers/balance/fund', (amount) => `{"amount":${amount}}`],
];

function send(url: string, payload: string) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
    payload,
  });
}

describe('an amount is read from its own digits on every money route', () => {
  for (const [route, url, body] of ROUTES) {
    it.each(REFUSED)(`${route}: %s is a 400 naming amount, and nothing moves`, async (amount, rule) => {
      const before = await stateFingerprint(runtime.db, [merchant.accountId]);
      const res = await send(url(), body(amount));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'amount' });
      expect(res.json().error.message).toMatch(rule);
      expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
    });
  }

  it('the rule is the same on both sides of where a double rounds: 1.0000001 USDC is refused like 1.00000000000000001', async () => {
    for (const amount of ['1.0000001', '1.00000000000000001']) {
      const res = await send('/v1/payouts', `{"amount":${amount},"to_address":"${ADDRESS_A}"}`);
      expect(res.statusCode, amount).toBe(400);
      expect(res.json().error.param).toBe('amount');
    }
  });

  it('amounts written with trailing zeros are the amount they say, to the unit', async () => {
    const payment = await send(
      '/v1/payments',
      '{"amount":100.50,"currency":"NGN","redirect_url":"https://shop.example/thanks","ttl_minutes":60.0}',
    );
    expect(payment.statusCode, payment.body).toBe(200);
    expect(payment.json().amount).toBe(100.5);
    const row = await runtime.db
      .selectFrom('payments')
      .select('amount_minor')
      .where('id', '=', payment.json().id)
      .executeTakeFirstOrThrow();
    expect(row.amount_minor).toBe(10050n);
    const payout = await send('/v1/payouts', `{"amount":2.500000,"to_address":"${ADDRESS_A}"}`);
    expect(payout.statusCode, payout.body).toBe(200);
    expect(payout.json().amount).toBe(2.5);
  });

  it('a whole-number field is read from its digits too: share_bps 10000.0000000000001 is not 10000', async () => {
    const before = await stateFingerprint(runtime.db, [merchant.accountId]);
    const res = await send(
      '/v1/revenue_shares',
      `{"amount":1,"splits":[{"to_address":"${ADDRESS_A}","share_bps":10000.0000000000001}]}`,
    );
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.param).toBe('splits[0].share_bps');
    expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
  });
});

describe('whole-number fields outside money read their digits the same way', () => {
  it('POST /keys/:id/rotate: expires_in_minutes 60.0 is 60, 60.00000000000000001 is not a whole number', async () => {
    const issue = async () => {
      const res = await send('/keys', '{"name":"to rotate"}');
      expect(res.statusCode, res.body).toBe(200);
      return res.json().id as string;
    };
    const refused = await send(`/keys/${await issue()}/rotate`, '{"expires_in_minutes":60.00000000000000001}');
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json().error.param).toBe('expires_in_minutes');
    const rotated = await send(`/keys/${await issue()}/rotate`, '{"expires_in_minutes":60.0}');
    expect(rotated.statusCode, rotated.body).toBe(200);
  });
});

describe('an amount is read from its own digits on every MCP money tool', () => {
  const TOOLS: Array<[string, (amount: string) => string]> = [
    ['create_payment', (a) => `{"amount":${a},"currency":"USDC","redirect_url":"https://shop.example/thanks"}`],
    ['create_payout', (a) => `{"amount":${a},"to_address":"${ADDRESS_A}"}`],
    ['refund_payment', (a) => `{"payment_id":"${paidPaymentId}","amount":${a}}`],
    ['split_revenue', (a) => `{"amount":${a},"splits":[{"to_address":"${ADDRESS_A}","share_bps":10000}]}`],
  ];

  for (const [tool, args] of TOOLS) {
    it.each(REFUSED.slice(0, 5))(
      `${tool}: %s is an invalid_request naming amount, and nothing moves`,
      async (amount) => {
        const session = await openInjectedMcpSession(app, merchant.apiKey, 'amounts');
        const before = await stateFingerprint(runtime.db, [merchant.accountId]);
        const res = await app.inject({
          method: 'POST',
          url: '/mcp',
          headers: { ...session, accept: MCP_ACCEPT },
          payload: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${tool}","arguments":${args(amount)}}}`,
        });
        const line = res.body.split('\n').find((l) => l.startsWith('data: '));
        const data = JSON.parse(line?.slice(6) ?? res.body);
        expect(data.result?.isError, res.body).toBe(true);
        expect(JSON.parse(data.result.content[0].text).error).toMatchObject({
          type: 'invalid_request_error',
          param: 'amount',
        });
        expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
      },
    );
  }
});
