import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { buildMcpServer } from '../src/mcp/server.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_C, firstKeyAuth, fund, post } from './support/money.ts';

/**
 * Assistants can follow up on what the policy held (issue 14, point 6): the held answer of a money
 * tool carries the confirmation id, its status and expiry, in structured content and in text, and
 * says to ask get_confirmation, which tells how it ended and what it created.
 */

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

/** An MCP client of the account's first key (every scope), in memory. */
async function connect(accountId: string): Promise<Client> {
  const server = buildMcpServer(runtime, await firstKeyAuth(runtime, accountId));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'follow-up', version: '1' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  // Listing caches each tool's outputSchema: the client then validates structuredContent itself.
  await client.listTools();
  return client;
}

interface HeldAnswer {
  status: string;
  confirmation_id: string;
  expires_at: string;
  follow_up: string;
}

async function holdPayout(client: Client, amount = 5000): Promise<{ held: HeldAnswer; texts: string[] }> {
  const result = (await client.callTool({
    name: 'create_payout',
    arguments: { amount, to_address: ADDRESS_C },
  })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return {
    held: result.structuredContent as unknown as HeldAnswer,
    texts: result.content.map((c) => (c.type === 'text' ? c.text : '')),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the tool's structured output, read field by field.
async function getConfirmation(client: Client, id: string): Promise<any> {
  const result = (await client.callTool({
    name: 'get_confirmation',
    arguments: { confirmation_id: id },
  })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent;
}

describe('the held answer over MCP', () => {
  it('carries confirmation_id, status and expires_at in structured content and in the text, and says how to follow up', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const client = await connect(m.accountId);
    const { held, texts } = await holdPayout(client);

    const row = await runtime.db
      .selectFrom('confirmations')
      .select(['id', 'expires_at'])
      .where('account_id', '=', m.accountId)
      .executeTakeFirstOrThrow();
    expect(held).toMatchObject({
      status: 'confirmation_required',
      confirmation_id: row.id,
      expires_at: row.expires_at.toISOString(),
    });
    expect(held.follow_up).toContain('get_confirmation');
    expect(held.follow_up).toContain(row.id);
    // The first text is the structured answer; the second says it in words, with the same facts.
    expect(JSON.parse(texts[0]!)).toEqual(held);
    for (const fact of [
      row.id,
      'confirmation_required',
      held.expires_at,
      `get_confirmation with {"confirmation_id":"${row.id}"}`,
    ]) {
      expect(texts[1]).toContain(fact);
    }
    await client.close();
  });
});

describe('get_confirmation', () => {
  it('follows a held payout: waiting, then executed with the payout it created; REST reads the same object', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const client = await connect(m.accountId);
    const { held } = await holdPayout(client);

    const waiting = await getConfirmation(client, held.confirmation_id);
    expect(waiting).toMatchObject({
      id: held.confirmation_id,
      object: 'confirmation',
      status: 'pending',
      error: null,
      created_object: null,
      outcome: expect.stringMatching(/^Waiting for a person to approve or reject it/),
    });

    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals', 'payments:read'] });
    const approved = await post(app, approver, `/v1/confirmations/${held.confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    const payoutId: string = approved.json().result.id;

    const executed = await getConfirmation(client, held.confirmation_id);
    expect(executed).toMatchObject({
      status: 'executed',
      error: null,
      created_object: { id: payoutId, object: 'payout', status: 'queued' },
    });
    expect(executed.outcome).toContain(`it created payout ${payoutId} (queued now)`);
    expect(executed.decided_by_key).toMatch(/^key_/);

    // One implementation: GET /v1/confirmations/:confirmation_id is this tool.
    const rest = await app.inject({
      method: 'GET',
      url: `/v1/confirmations/${held.confirmation_id}`,
      headers: bearer(m.apiKey),
    });
    expect(rest.statusCode).toBe(200);
    expect(rest.json()).toEqual(executed);
    await client.close();
  });

  it('says rejected or expired, with nothing created', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const client = await connect(m.accountId);
    const first = (await holdPayout(client, 5000)).held;
    const second = (await holdPayout(client, 6000)).held;

    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    expect((await post(app, approver, `/v1/confirmations/${first.confirmation_id}/reject`)).statusCode).toBe(200);
    expect(await getConfirmation(client, first.confirmation_id)).toMatchObject({
      status: 'rejected',
      created_object: null,
      outcome: expect.stringMatching(/^Rejected by a person at .*: nothing moved\.$/),
    });

    runtime.clock.advance(16 * 60_000);
    expect(await getConfirmation(client, second.confirmation_id)).toMatchObject({
      status: 'expired',
      created_object: null,
      outcome: expect.stringMatching(/^Nobody decided before .*, so it lapsed: nothing moved\./),
    });
    await client.close();
  });

  it('an approved run that failed: still pending, with the error it ended with', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    const client = await connect(m.accountId);
    // Above the mcp channel's 1,000 USDC threshold, and more than the balance holds.
    const { held } = await holdPayout(client, 1500);

    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals'] });
    const refused = await post(app, approver, `/v1/confirmations/${held.confirmation_id}/approve`);
    expect(refused.statusCode).toBe(402);

    const after = await getConfirmation(client, held.confirmation_id);
    expect(after).toMatchObject({
      status: 'pending',
      created_object: null,
      error: { type: 'insufficient_funds', code: 'insufficient_funds' },
    });
    expect(after.outcome).toMatch(/^An approval ran and failed \(.+\); nothing moved, and it still waits/);
    await client.close();
  });

  it('is not_found for an unknown id, as an isError result', async () => {
    const m = await testAccount(runtime);
    const client = await connect(m.accountId);
    const result = (await client.callTool({
      name: 'get_confirmation',
      arguments: { confirmation_id: 'conf_doesnotexist' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.parse((result.content[0] as { text: string }).text).error).toMatchObject({
      code: 'not_found',
      param: 'confirmation_id',
    });
    await client.close();
  });
});
