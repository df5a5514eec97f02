import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOfflinePlanner } from '../src/agent/models/offline-planner.ts';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { buildMcpServer } from '../src/mcp/server.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { ADDRESS_C, firstKeyAuth, fund, post } from './support/money.ts';

/**
 * The agent over MCP asks back inside the conversation (issue 32 item 2): by elicitation when the
 * client declared it, the answer continuing the same run; otherwise the result carries the
 * question and the run id, and agent_reply answers it.
 */

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 10_000);
  await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_C });
});

afterAll(async () => {
  await chain.close();
});

type Elicited = { action: 'accept'; content: { answer: string } };

async function connect(elicit?: (request: ElicitRequest) => Elicited | Promise<Elicited>) {
  const server = buildMcpServer(runtime, await firstKeyAuth(runtime, merchant.accountId), {
    elicitationTimeoutMs: 2000,
    agentModel: createOfflinePlanner(),
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'agent-test', version: '1' }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return client;
}

async function agentPayouts(): Promise<number> {
  const rows = await runtime.db
    .selectFrom('payouts')
    .select('id')
    .where('account_id', '=', merchant.accountId)
    .where('channel', '=', 'agent')
    .execute();
  return rows.length;
}

describe('agent_settle over MCP', () => {
  it('the question comes back by elicitation and the answer continues the same run', async () => {
    const asked: string[] = [];
    const client = await connect((request) => {
      asked.push(String(request.params.message));
      return { action: 'accept', content: { answer: `pay out 2 USDC to ${ADDRESS_C}` } };
    });
    const before = await agentPayouts();
    const result = await client.callTool({
      name: 'agent_settle',
      arguments: { instruction: 'send the usual amount to our supplier' },
    });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/amount/i);
    const run = result.structuredContent as { status: string; conversation: unknown[]; actions: unknown[] };
    expect(run.status).toBe('completed');
    expect(run.conversation).toHaveLength(3);
    expect(run.actions).toMatchObject([{ tool: 'create_payout', status: 'executed', input: { amount: 2 } }]);
    expect(await agentPayouts()).toBe(before + 1);
    await client.close();
  });

  it('answered over HTTP while the elicitation waits, the call returns what the run did, not an error', async () => {
    const before = await agentPayouts();
    const client = await connect(async () => {
      const waiting = await runtime.db
        .selectFrom('agent_runs')
        .select('id')
        .where('account_id', '=', merchant.accountId)
        .where('status', '=', 'needs_input')
        .executeTakeFirstOrThrow();
      const http = await post(app, merchant.apiKey, `/agent/runs/${waiting.id}/reply`, {
        message: `pay out 4 USDC to ${ADDRESS_C}`,
      });
      expect(http.json().status, http.body).toBe('completed');
      return { action: 'accept', content: { answer: `pay out 4 USDC to ${ADDRESS_C}` } };
    });
    const result = await client.callTool({
      name: 'agent_settle',
      arguments: { instruction: 'send the usual amount to our supplier' },
    });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      status: 'completed',
      actions: [{ tool: 'create_payout', status: 'executed', input: { amount: 4 } }],
    });
    expect(await agentPayouts()).toBe(before + 1);
    await client.close();
  });

  it('without elicitation the result carries the question and run id, and agent_reply answers it', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['agent_settle', 'agent_reply']));
    const before = await agentPayouts();
    const asked = await client.callTool({
      name: 'agent_settle',
      arguments: { instruction: 'send the usual amount to our supplier' },
    });
    const waiting = asked.structuredContent as { run_id: string; status: string; question: { text: string } };
    expect(waiting.status).toBe('needs_input');
    expect(JSON.stringify(asked.content)).toContain(`agent_reply {\\"run_id\\":\\"${waiting.run_id}\\"`);
    expect(await agentPayouts()).toBe(before);

    const answered = await client.callTool({
      name: 'agent_reply',
      arguments: { run_id: waiting.run_id, message: `pay out 3 USDC to ${ADDRESS_C}` },
    });
    expect((answered.structuredContent as { status: string }).status).toBe('completed');
    expect(await agentPayouts()).toBe(before + 1);

    const again = await client.callTool({ name: 'agent_reply', arguments: { run_id: waiting.run_id, message: 'yes' } });
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toContain('not waiting for an answer');
    const bad = await client.callTool({ name: 'agent_reply', arguments: { run_id: waiting.run_id } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain('message');
    await client.close();
  });
});
