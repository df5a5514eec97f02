import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { MCP_ACCEPT, openInjectedMcpSession } from './support/mcp.ts';
import { ADDRESS_A, availableBalance, editPolicy, fund, post } from './support/money.ts';

/**
 * Limits follow the principal (issue 33, item 1): a key issued to an assistant is judged by the
 * policy's mcp limits on every channel, so the assistant held at its MCP limits is held the same
 * way when it calls POST /v1/payouts or the agent with the same key; its REST spending counts in
 * the assistant cap; and it cannot make or take a key without those limits.
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

const payouts = (accountId: string) =>
  runtime.db.selectFrom('payouts').select(['amount_minor', 'channel']).where('account_id', '=', accountId).execute();

/**
 * An account holding 100 USDC whose assistant (mcp) limits hold anything above 2 USDC, refuse
 * anything above 10 and cap the assistant per 24 hours (20 unless told); the other channels keep the defaults
 * (the api channel refuses only above 1,000,000), new recipients aside. Its admin issued an
 * assistant's key over the API.
 */
async function assistantAccount(
  assistantScopes: string[] = ['payments:read', 'payouts:write', 'agent'],
  dailyCap = '20',
) {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, 100);
  const put = await editPolicy(app, m.apiKey, (policy) => {
    policy.channels.mcp = {
      confirm_above: '2',
      deny_above: '10',
      daily_cap: dailyCap,
      confirm_first_payout_to_new_recipient: false,
    };
    policy.channels.agent.confirm_first_payout_to_new_recipient = false;
  });
  expect(put.statusCode, put.body).toBe(200);
  const issued = await post(app, m.apiKey, '/keys', { name: 'assistant', scopes: assistantScopes, assistant: true });
  expect(issued.statusCode, issued.body).toBe(200);
  expect(issued.json()).toMatchObject({ assistant: true, scopes: assistantScopes });
  return { ...m, assistant: { id: issued.json().id as string, secret: issued.json().secret as string } };
}

async function mcpPayout(key: string, amount: number) {
  const session = await openInjectedMcpSession(app, key);
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { ...session, accept: MCP_ACCEPT },
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'create_payout', arguments: { amount, to_address: ADDRESS_A } },
    }),
  });
  const data = res.body.split('\n').find((line) => line.startsWith('data: '));
  return JSON.parse(data!.slice('data: '.length)).result;
}

describe("an assistant's key is held to the assistant's limits on every channel", () => {
  it('a 5 USDC payout held over MCP is held the same way over REST and the agent; nothing moves', async () => {
    const m = await assistantAccount();
    const overMcp = await mcpPayout(m.assistant.secret, 5);
    expect(overMcp.structuredContent, JSON.stringify(overMcp)).toMatchObject({ status: 'confirmation_required' });

    const overRest = await post(app, m.assistant.secret, '/v1/payouts', { amount: 5, to_address: ADDRESS_A });
    expect(overRest.statusCode, overRest.body).toBe(202);
    expect(overRest.json()).toMatchObject({ status: 'confirmation_required' });
    expect(JSON.stringify(overRest.json().reasons)).toContain("mcp channel's confirmation threshold of 2");

    const overAgent = await post(app, m.assistant.secret, '/agent/settle', {
      instruction: `pay out 5 USDC to ${ADDRESS_A}`,
    });
    expect(overAgent.statusCode, overAgent.body).toBe(200);
    expect(overAgent.json().status).toBe('confirmation_required');

    const session = await openInjectedMcpSession(app, m.assistant.secret);
    const overMcpAgent = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...session, accept: MCP_ACCEPT },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'agent_settle', arguments: { instruction: `pay out 5 USDC to ${ADDRESS_A}` } },
      }),
    });
    const agentAnswer = JSON.parse(
      overMcpAgent.body
        .split('\n')
        .find((line) => line.startsWith('data: '))!
        .slice('data: '.length),
    ).result;
    expect(agentAnswer.structuredContent, JSON.stringify(agentAnswer)).toMatchObject({
      status: 'confirmation_required',
    });

    const refused = await post(app, m.assistant.secret, '/v1/payouts', { amount: 11, to_address: ADDRESS_A });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().error.message).toContain("mcp channel's limit of 10");
    expect(await payouts(m.accountId)).toEqual([]);

    // The same payout with the admin's own key runs: the key decides, not the transport.
    const byAdmin = await post(app, m.apiKey, '/v1/payouts', { amount: 5, to_address: ADDRESS_A });
    expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    expect(await availableBalance(app, m.apiKey)).toBe(95);
  });

  it("its REST payouts count in the assistant's 24-hour cap", async () => {
    const m = await assistantAccount(undefined, '3');
    const first = await post(app, m.assistant.secret, '/v1/payouts', { amount: 2, to_address: ADDRESS_A });
    expect(first.statusCode, first.body).toBe(200);
    const second = await post(app, m.assistant.secret, '/v1/payouts', { amount: 2, to_address: ADDRESS_A });
    expect(second.statusCode, second.body).toBe(403);
    expect(second.json().error.message).toContain("above the mcp channel's cap of 3");
    const overMcp = await mcpPayout(m.assistant.secret, 2);
    expect(overMcp.isError).toBe(true);
    expect(await payouts(m.accountId)).toEqual([{ amount_minor: 2_000_000n, channel: 'api' }]);
  });

  it("a held REST payout of the assistant is judged again by the assistant's limits on approval, and runs once", async () => {
    const m = await assistantAccount();
    const held = await post(app, m.assistant.secret, '/v1/payouts', { amount: 3, to_address: ADDRESS_A });
    expect(held.statusCode, held.body).toBe(202);
    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const approve = () => post(app, approver, `/v1/confirmations/${held.json().confirmation_id}/approve`);

    // The assistant's ceiling drops below it while it waits: the approval cannot lift a deny.
    const tightened = await editPolicy(app, m.apiKey, (policy) => {
      policy.channels.mcp.deny_above = '2.5';
    });
    expect(tightened.statusCode, tightened.body).toBe(200);
    const refused = await approve();
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().error.message).toContain("mcp channel's limit of 2.5");
    expect(await payouts(m.accountId)).toEqual([]);

    const loosened = await editPolicy(app, m.apiKey, (policy) => {
      policy.channels.mcp.deny_above = '10';
    });
    expect(loosened.statusCode, loosened.body).toBe(200);
    const approved = await approve();
    expect(approved.statusCode, approved.body).toBe(200);
    expect(await payouts(m.accountId)).toEqual([{ amount_minor: 3_000_000n, channel: 'api' }]);
  });

  it('cannot make or take a key without its limits', async () => {
    const m = await assistantAccount(['payments:read', 'payouts:write', 'keys']);
    const freer = await post(app, m.assistant.secret, '/keys', { assistant: false });
    expect(freer.statusCode, freer.body).toBe(403);
    expect(freer.json().error.param).toBe('assistant');
    const child = await post(app, m.assistant.secret, '/keys', { name: 'child' });
    expect(child.statusCode, child.body).toBe(200);
    expect(child.json().assistant).toBe(true);
    const rotated = await post(app, m.assistant.secret, `/keys/${child.json().id}/rotate`, {});
    expect(rotated.json().new_key.assistant).toBe(true);

    const plain = await post(app, m.apiKey, '/keys', { scopes: ['payments:read'] });
    expect(plain.json().assistant).toBe(false);
    const taken = await post(app, m.assistant.secret, `/keys/${plain.json().id}/rotate`, {});
    expect(taken.statusCode, taken.body).toBe(403);
  });
});
