import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { changedTables, stateFingerprint } from './support/fuzz.ts';
import { MCP_ACCEPT, openInjectedMcpSession } from './support/mcp.ts';
import { ADDRESS_A, fund, post } from './support/money.ts';

/**
 * Request bodies are UTF-8 JSON and nothing else (issue 33, point 4; docs/api.md, Bodies). Each
 * lenient body below was once accepted and paid: a declared charset other than UTF-8, a
 * Content-Encoding never decoded, invalid UTF-8 and a lone surrogate (both stored as U+FFFD). Each
 * is now a 4xx naming the rule, on the REST API and on MCP, and moves nothing.
 */
let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 1000);
  // A first payout over the API: the MCP channel's new-recipient rule stays out of the way.
  expect((await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_A })).statusCode).toBe(200);
});

const PAYOUT = `{"amount":1,"to_address":"${ADDRESS_A}","memo":"rent"}`;

interface Lenient {
  name: string;
  headers: Record<string, string>;
  body: (json: string) => Buffer;
  status: number;
  rule: RegExp;
  param?: string;
}

const utf8 = (json: string): Buffer => Buffer.from(json, 'utf8');

const LENIENT: Lenient[] = [
  {
    name: 'charset=utf-16 declared on a UTF-8 body',
    headers: { 'content-type': 'application/json; charset=utf-16' },
    body: utf8,
    status: 415,
    rule: /charset=utf-16 is not accepted/,
  },
  {
    name: 'charset=latin1',
    headers: { 'content-type': 'application/json;charset="latin1"' },
    body: utf8,
    status: 415,
    rule: /charset=latin1 is not accepted/,
  },
  {
    name: 'Content-Encoding: gzip on a plain body',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: utf8,
    status: 415,
    rule: /Content-Encoding gzip is not accepted/,
  },
  {
    name: 'Content-Encoding: gzip on a gzip body (nothing is decoded)',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: (json) => gzipSync(json),
    status: 415,
    rule: /Content-Encoding gzip is not accepted/,
  },
  {
    name: 'invalid UTF-8 in the memo',
    headers: { 'content-type': 'application/json' },
    body: (json) => Buffer.concat([utf8(json.replace('"rent"', '"re')), Buffer.from([0xff, 0xfe]), utf8('nt"}')]),
    status: 400,
    rule: /not valid UTF-8/,
  },
  {
    name: 'an encoded surrogate (CESU-8) in the memo',
    headers: { 'content-type': 'application/json' },
    body: (json) => Buffer.concat([utf8(json.replace('"rent"', '"re')), Buffer.from([0xed, 0xa0, 0x80]), utf8('nt"}')]),
    status: 400,
    rule: /not valid UTF-8/,
  },
  {
    name: 'a lone high surrogate escape in the memo',
    headers: { 'content-type': 'application/json' },
    body: (json) => utf8(json.replace('"rent"', '"re\\ud800nt"')),
    status: 400,
    rule: /lone UTF-16 surrogate/,
    param: 'memo',
  },
  {
    name: 'a lone low surrogate escape at the end of the memo',
    headers: { 'content-type': 'application/json' },
    body: (json) => utf8(json.replace('"rent"', '"rent\\uDC00"')),
    status: 400,
    rule: /lone UTF-16 surrogate/,
    param: 'memo',
  },
  {
    name: 'two high surrogate escapes in a row',
    headers: { 'content-type': 'application/json' },
    body: (json) => utf8(json.replace('"rent"', '"\\ud83d\\ud83d"')),
    status: 400,
    rule: /lone UTF-16 surrogate/,
    param: 'memo',
  },
];

describe('REST: only UTF-8 JSON bodies', () => {
  it.each(LENIENT)('$name: a $status error object naming the rule, and nothing moves', async (c) => {
    const before = await stateFingerprint(runtime.db, [merchant.accountId]);
    const res = await app.inject({
      method: 'POST',
      url: '/v1/payouts',
      headers: { ...bearer(merchant.apiKey), ...c.headers },
      payload: c.body(PAYOUT),
    });
    expect(res.statusCode, res.body).toBe(c.status);
    expect(res.json().error.type).toBe('invalid_request_error');
    expect(res.json().error.message).toMatch(c.rule);
    if (c.param) expect(res.json().error.param).toBe(c.param);
    expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
  });

  it('a lone surrogate in a payment description is named by its field', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload:
        '{"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks","description":"tea \\udead"}',
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.param).toBe('description');
  });

  it('what the rules allow still pays: charset=utf-8 in any case, identity encoding, a surrogate pair, non-ASCII text', async () => {
    for (const [headers, memo] of [
      [{ 'content-type': 'application/json; charset=utf-8' }, 'rent'],
      [{ 'content-type': 'application/json; charset="UTF-8"' }, 'caf\\u00e9'],
      [{ 'content-type': 'application/json', 'content-encoding': 'identity' }, '\\ud83d\\ude00'],
      [{ 'content-type': 'application/json' }, 'naïve 😀'],
    ] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/payouts',
        headers: { ...bearer(merchant.apiKey), ...headers },
        payload: utf8(PAYOUT.replace('"rent"', `"${memo}"`)),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().memo).not.toContain('\ufffd');
    }
  });
});

describe('MCP over HTTP: the same body rules, as JSON-RPC errors', () => {
  const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_payout","arguments":${PAYOUT}}}`;

  it.each(LENIENT)('$name: refused before the tool runs, and nothing moves', async (c) => {
    const session = await openInjectedMcpSession(app, merchant.apiKey, 'bodies');
    const before = await stateFingerprint(runtime.db, [merchant.accountId]);
    const res = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...session, accept: MCP_ACCEPT, ...c.headers },
      payload: c.body(call),
    });
    expect(res.statusCode, res.body).toBe(c.status);
    expect(res.json().error.code).toBe(c.status === 415 ? -32000 : -32700);
    expect(res.json().error.message).toMatch(c.rule);
    expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
  });
});

describe('MCP protocol errors carry the JSON-RPC codes', () => {
  it('an empty batch is -32600 Invalid Request, not a 202', async () => {
    const session = await openInjectedMcpSession(app, merchant.apiKey, 'bodies');
    const res = await app.inject({ method: 'POST', url: '/mcp', headers: session, payload: '[]' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
  });

  it.each([
    ['a list', '[1]'],
    ['a string', '"pay 5"'],
    ['a number', '5'],
    ['null', 'null'],
  ])(
    'tools/call arguments that are %s: -32602 Invalid params with a short message, and nothing runs',
    async (_name, args) => {
      const session = await openInjectedMcpSession(app, merchant.apiKey, 'bodies');
      const before = await stateFingerprint(runtime.db, [merchant.accountId]);
      const res = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: session,
        payload: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"create_payout","arguments":${args}}}`,
      });
      const line = res.body.split('\n').find((l) => l.startsWith('data: '));
      const answer = JSON.parse(line?.slice(6) ?? res.body);
      expect(answer).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32602 } });
      expect(answer.error.message).toMatch(/arguments must be an object/);
      expect(answer.error.message.length).toBeLessThan(120);
      expect(changedTables(before, await stateFingerprint(runtime.db, [merchant.accountId]))).toEqual([]);
    },
  );
});
