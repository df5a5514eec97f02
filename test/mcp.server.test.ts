import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { annotationsFor, buildMcpServer } from '../src/mcp/server.ts';
import { TOOLS } from '../tools/registry.ts';
import { settlesBeforeHang } from './support/hang.ts';
import { testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_C, availableBalance, firstKeyAuth, fund } from './support/money.ts';

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
});

afterAll(async () => {
  await chain.close();
});

describe('buildMcpServer (in memory)', () => {
  it('annotations follow the effect', () => {
    expect(annotationsFor({ title: 'T', effect: 'read' })).toEqual({
      title: 'T',
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(annotationsFor({ title: 'T', effect: 'write' })).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    });
    expect(annotationsFor({ title: 'T', effect: 'money' })).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  it('a client that never answers the held-action notice still gets confirmation_required, and nothing moves', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const server = buildMcpServer(runtime, await firstKeyAuth(runtime, m.accountId), { elicitationTimeoutMs: 200 });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'silent', version: '1' }, { capabilities: { elicitation: {} } });
    let asked = 0;
    client.setRequestHandler(ElicitRequestSchema, () => {
      asked++;
      return new Promise(() => {}); // the user never answers
    });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);

    // A user who never answers the elicitation must not hold the call: it returns, held.
    const call = await settlesBeforeHang(
      client.callTool({ name: 'create_payout', arguments: { amount: 5000, to_address: ADDRESS_C } }),
    );
    if (!call.settled) throw new Error('create_payout waited on an unanswered elicitation');
    const held = call.value;
    expect(asked).toBe(1);
    expect(held.isError).toBeFalsy();
    expect(held.structuredContent).toMatchObject({ status: 'confirmation_required' });
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .select(['tool', 'status', 'channel'])
      .where('account_id', '=', m.accountId)
      // Funding the test balance is the service's own step (channel system), not the client's.
      .where('channel', '<>', 'system')
      .execute();
    expect(actions).toEqual([{ tool: 'create_payout', status: 'held', channel: 'mcp' }]);
    await client.close();
  });

  it('docs/mcp.md lists every catalogue tool with its scope and effect', () => {
    const docs = readFileSync(new URL('../docs/mcp.md', import.meta.url), 'utf8');
    for (const tool of TOOLS) {
      expect(docs).toContain(`| \`${tool.name}\` | \`${tool.scope}\` | ${tool.effect} |`);
    }
  });
});
