import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_B, availableBalance, expectLedgerBalanced, fund, post } from './support/money.ts';

/**
 * Money moves once per intent on every channel (issue 16, point 3): a payout's reference names one
 * payout for good, and an MCP money call takes an idempotency key, so an assistant whose call timed
 * out can retry without paying twice. (A JSON-RPC id is no such key: test/mcp.request-ids.test.ts.)
 */
let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let mcpUrl: URL;
const clients: Client[] = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  mcpUrl = new URL('/mcp', await app.listen({ port: 0, host: '127.0.0.1' }));
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await chain.close();
});

const payoutsOf = (accountId: string, channel?: string) =>
  runtime.db
    .selectFrom('payouts')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(channel !== undefined, (q) => q.where('channel', '=', channel!))
    .execute();

/** A first payout to the address over the API, so the MCP channel's new-recipient rule stays out of the way. */
async function knownRecipient(key: string, address: string): Promise<void> {
  expect((await post(app, key, '/v1/payouts', { amount: 1, to_address: address })).statusCode).toBe(200);
}

async function mcpClient(key: string): Promise<Client> {
  const client = new Client({ name: 'retrying-assistant', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: bearer(key) } }));
  clients.push(client);
  return client;
}

describe('a payout reference names one payout for good', () => {
  it('the same reference again returns the first payout; other parameters are a 409 naming it', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 100);
    const body = { amount: 7, to_address: ADDRESS_A, reference: 'inv-dup-1', memo: 'March invoice' };
    const first = await post(app, m.apiKey, '/v1/payouts', body);
    expect(first.statusCode, first.body).toBe(200);
    // A retry (no Idempotency-Key, the address in another case): the same payout, nothing moved again.
    const again = await post(app, m.apiKey, '/v1/payouts', {
      ...body,
      to_address: ADDRESS_A.toUpperCase().replace('0X', '0x'),
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(first.json().id);
    expect(await payoutsOf(m.accountId)).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(93);

    const other = await post(app, m.apiKey, '/v1/payouts', { ...body, amount: 8 });
    expect(other.statusCode).toBe(409);
    expect(other.json().error).toMatchObject({ type: 'invalid_request_error', param: 'reference' });
    expect(other.json().error.message).toContain(first.json().id);
    expect(await payoutsOf(m.accountId)).toHaveLength(1);

    // Still after the idempotency window: the reference binds, not a stored response.
    await runtime.db.deleteFrom('idempotency_keys').where('account_id', '=', m.accountId).execute();
    const later = await post(app, m.apiKey, '/v1/payouts', body);
    expect(later.json().id).toBe(first.json().id);
    expect(await availableBalance(app, m.apiKey)).toBe(93);
    await expectLedgerBalanced(runtime);
  });

  it('two held payouts with one reference, both approved, pay once', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    const policy = (await app.inject({ method: 'GET', url: '/v1/policy', headers: bearer(m.apiKey) })).json().policy;
    policy.channels.api.confirm_above = '10';
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/policy',
      headers: { ...bearer(m.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify(policy),
    });
    expect(put.statusCode, put.body).toBe(200);
    const body = { amount: 50, to_address: ADDRESS_B, reference: 'supplier-apr' };
    const heldA = await post(app, m.apiKey, '/v1/payouts', body);
    const heldB = await post(app, m.apiKey, '/v1/payouts', body);
    expect([heldA.statusCode, heldB.statusCode]).toEqual([202, 202]);
    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const approvedA = await post(app, approver, `/v1/confirmations/${heldA.json().confirmation_id}/approve`);
    const approvedB = await post(app, approver, `/v1/confirmations/${heldB.json().confirmation_id}/approve`);
    expect(approvedA.statusCode, approvedA.body).toBe(200);
    expect(approvedB.statusCode, approvedB.body).toBe(200);
    expect(approvedB.json().result.id).toBe(approvedA.json().result.id);
    expect(await payoutsOf(m.accountId)).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(950);
    const pending = (await app.inject({ method: 'GET', url: '/v1/confirmations', headers: bearer(m.apiKey) })).json();
    expect(pending.data).toEqual([]);
  });
});

describe('MCP money tools are idempotent', () => {
  it('advertise idempotency_key on money tools only', async () => {
    const m = await testAccount(runtime);
    const { tools } = await (await mcpClient(m.apiKey)).listTools();
    const props = (name: string) => Object.keys(tools.find((t) => t.name === name)?.inputSchema.properties ?? {});
    expect(props('create_payout')).toContain('idempotency_key');
    expect(props('split_revenue')).toContain('idempotency_key');
    expect(props('refund_payment')).toContain('idempotency_key');
    expect(props('get_balance')).not.toContain('idempotency_key');
    expect(props('create_payment')).not.toContain('idempotency_key');
  });

  it('a retried create_payout with the same key pays once; a malformed key is refused naming it', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 101);
    await knownRecipient(m.apiKey, ADDRESS_A);
    const client = await mcpClient(m.apiKey);
    const call = (args: Record<string, unknown>) =>
      client.callTool({ name: 'create_payout', arguments: args }) as Promise<CallToolResult>;
    const args = { amount: 3, to_address: ADDRESS_A, idempotency_key: 'assistant-7f3a' };
    const first = await call(args);
    const retry = await call(args);
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ object: 'payout', amount: 3 });
    expect(retry.structuredContent).toEqual(first.structuredContent);
    expect(await payoutsOf(m.accountId, 'mcp')).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(97);

    const changed = await call({ ...args, amount: 4 });
    expect(changed.isError).toBe(true);
    expect(JSON.parse((changed.content[0] as { text: string }).text).error.type).toBe('idempotency_error');

    const bad = await call({ amount: 1, to_address: ADDRESS_A, idempotency_key: 'has space' });
    expect(bad.isError).toBe(true);
    expect(JSON.parse((bad.content[0] as { text: string }).text).error.param).toBe('idempotency_key');
    expect(await payoutsOf(m.accountId, 'mcp')).toHaveLength(1);
  });
});
