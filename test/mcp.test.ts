import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  type ClientCapabilities,
  ElicitRequestSchema,
  type ElicitRequest,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { MISSING_KEY_MESSAGE } from '../src/http/plugins/auth.ts';
import { TOOLS } from '../tools/registry.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_C, availableBalance, expectLedgerBalanced, fund, post } from './support/money.ts';
import { VALID_PAYMENT } from './support/payments.ts';

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let mcpUrl: URL;
const clients: Client[] = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  mcpUrl = new URL('/mcp', address);
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await chain.close();
});

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  elicitations: ElicitRequest['params'][];
}

/** The SDK's own Client over Streamable HTTP with a bearer key; optionally answering elicitations. */
async function connect(
  key: string,
  options: { capabilities?: ClientCapabilities; answer?: 'accept' | 'decline' } = {},
): Promise<Connected> {
  const client = new Client({ name: 'plainpay-test', version: '1.0.0' }, { capabilities: options.capabilities ?? {} });
  const elicitations: ElicitRequest['params'][] = [];
  if (options.capabilities?.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(request.params);
      return options.answer === 'decline'
        ? { action: 'decline' }
        : request.params.mode === 'url'
          ? { action: 'accept' }
          : { action: 'accept', content: {} };
    });
  }
  const transport = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: bearer(key) } });
  await client.connect(transport);
  clients.push(client);
  return { client, transport, elicitations };
}

function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

type RpcError = { error: { code: number; message: string } };

function textContent(content: { text: string } | { blob: string } | undefined): string {
  if (!content || !('text' in content)) throw new Error('expected a text resource');
  return content.text;
}

async function mcpActions(accountId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('channel', '=', 'mcp')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

describe('MCP over Streamable HTTP', () => {
  it('lists the catalogue with schemas and effect annotations; create_payment then get_payment round-trip', async () => {
    const m = await testAccount(runtime);
    const { client } = await connect(m.apiKey);
    expect(client.getServerVersion()?.name).toBe('plainpay');

    const { tools } = await client.listTools();
    // The catalogue, then the agent's own two tools (src/mcp/agent-tools.ts) for a key with `agent`.
    expect(tools.map((t) => t.name)).toEqual([...TOOLS.map((t) => t.name), 'agent_settle', 'agent_reply']);
    for (const tool of tools.filter((t) => TOOLS.some((source) => source.name === t.name))) {
      const source = TOOLS.find((t) => t.name === tool.name)!;
      expect(tool.title).toBe(source.title);
      expect(tool.description).toContain(source.description);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      const hints = tool.annotations!;
      if (source.effect === 'read') expect(hints).toMatchObject({ readOnlyHint: true, idempotentHint: true });
      if (source.effect === 'write') expect(hints).toMatchObject({ readOnlyHint: false, destructiveHint: false });
      if (source.effect === 'money')
        expect(hints).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });
    }
    const create = tools.find((t) => t.name === 'create_payment')!;
    expect(create.inputSchema.required).toEqual(expect.arrayContaining(['amount', 'currency', 'redirect_url']));
    expect(create.inputSchema.properties?.amount).toMatchObject({ type: 'number' });

    // The client validates structuredContent against each outputSchema itself.
    const created = await client.callTool({
      name: 'create_payment',
      arguments: { ...VALID_PAYMENT, reference: 'mcp-1' },
    });
    expect(created.isError, textOf(created as CallToolResult)).toBeFalsy();
    const payment = created.structuredContent as { id: string; object: string; status: string; amount: number };
    expect(payment).toMatchObject({
      object: 'payment',
      status: 'pending',
      amount: 5000,
      currency: 'NGN',
      reference: 'mcp-1',
    });
    expect(JSON.parse(textOf(created as CallToolResult))).toEqual(payment);

    const read = await client.callTool({ name: 'get_payment', arguments: { payment_id: payment.id } });
    expect(read.isError).toBeFalsy();
    expect(read.structuredContent).toEqual(payment);

    // The same payment over REST: one object, two channels.
    const rest = await app.inject({ method: 'GET', url: `/v1/payments/${payment.id}`, headers: bearer(m.apiKey) });
    expect(rest.json()).toEqual(payment);
  });

  it('refuses a missing or invalid key with 401 and WWW-Authenticate, on every request', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
    };
    const send = (headers: Record<string, string>) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
    const missing = await send({});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await missing.json()).toEqual({
      error: { type: 'authentication_error', message: MISSING_KEY_MESSAGE, code: 'authentication_required' },
    });

    const invalid = await send(bearer('sk_test_notakey'));
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('www-authenticate')).toContain('invalid_token');

    // A session opened with a key still needs the key on every later request.
    const m = await testAccount(runtime);
    const { transport } = await connect(m.apiKey);
    const sessionId = transport.sessionId!;
    const later = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(later.status).toBe(401);

    // The SDK client surfaces the 401 as a connection error.
    const client = new Client({ name: 'no-key', version: '1' });
    await expect(client.connect(new StreamableHTTPClientTransport(mcpUrl))).rejects.toThrow(/401|No API key/);
  });

  it('a key without payouts:write does not see create_payout; calling it anyway is a permission_error, logged', async () => {
    const m = await testAccount(runtime);
    const readOnly = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const { client } = await connect(readOnly);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('create_payout');
    expect(names).not.toContain('create_payment');
    expect(names).toEqual(TOOLS.filter((t) => t.scope === 'payments:read').map((t) => t.name));

    const result = (await client.callTool({
      name: 'create_payout',
      arguments: { amount: 1, to_address: ADDRESS_A },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.parse(textOf(result)).error).toMatchObject({
      type: 'permission_error',
      code: 'permission_denied',
      message: expect.stringContaining('payouts:write'),
    });
    const payouts = await runtime.db.selectFrom('payouts').select('id').where('account_id', '=', m.accountId).execute();
    expect(payouts).toHaveLength(0);
    const logged = await mcpActions(m.accountId);
    expect(logged.map((a) => [a.tool, a.status])).toEqual([['create_payout', 'failed']]);
  });

  it('tool errors are isError results with the API error type; protocol errors stay protocol errors', async () => {
    const m = await testAccount(runtime);
    const { client } = await connect(m.apiKey);
    const bad = (await client.callTool({
      name: 'create_payment',
      arguments: { ...VALID_PAYMENT, amount: -5 },
    })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(JSON.parse(textOf(bad))).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'invalid_request',
        param: 'amount',
        message: expect.stringContaining('amount'),
      },
    });
    const missing = (await client.callTool({
      name: 'get_payment',
      arguments: { payment_id: 'pay_doesnotexist' },
    })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(JSON.parse(textOf(missing)).error.type).toBe('invalid_request_error');

    const unknown = client.callTool({ name: 'approve_confirmation', arguments: {} });
    await expect(unknown).rejects.toBeInstanceOf(McpError);
    await expect(unknown).rejects.toMatchObject({ code: -32602 });
  });

  it('a 5,000 USDC payout is held: confirmation_required, nothing moves, an elicitation "accept" approves nothing; the API approves it once', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const { client, elicitations } = await connect(m.apiKey, { capabilities: { elicitation: {} }, answer: 'accept' });

    const held = (await client.callTool({
      name: 'create_payout',
      arguments: { amount: 5000, asset: 'USDC', to_address: ADDRESS_C },
    })) as CallToolResult;
    expect(held.isError).toBeFalsy();
    const structured = held.structuredContent as Record<string, unknown> & {
      confirmation_id: string;
      approve_url: string;
    };
    expect(structured).toMatchObject({
      status: 'confirmation_required',
      confirmation_id: expect.stringMatching(/^conf_/),
      summary: expect.stringContaining('5,000'),
      approve_url: expect.stringContaining(structured.confirmation_id),
      expires_at: expect.any(String),
    });
    // The client was told, as a form-mode notice (it declared only form elicitation), and accepted.
    expect(elicitations).toHaveLength(1);
    expect(elicitations[0]).toMatchObject({ mode: 'form', message: expect.stringContaining(structured.approve_url) });
    expect(elicitations[0]!.message).toContain('does not approve');

    // Nothing moved, and the accept did not approve it.
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
    const payoutRows = () =>
      runtime.db
        .selectFrom('payouts')
        .select('id')
        .where('account_id', '=', m.accountId)
        .where('amount_minor', '=', 5_000_000_000n)
        .execute();
    expect(await payoutRows()).toHaveLength(0);
    const pending = (await app.inject({ method: 'GET', url: '/v1/confirmations', headers: bearer(m.apiKey) })).json();
    expect(pending.data).toEqual([
      expect.objectContaining({ id: structured.confirmation_id, status: 'pending', channel: 'mcp' }),
    ]);
    // The model can see it is still pending, through its own tool.
    const listed = await client.callTool({ name: 'list_pending_confirmations', arguments: {} });
    expect((listed.structuredContent as { data: { id: string }[] }).data.map((c) => c.id)).toEqual([
      structured.confirmation_id,
    ]);

    // A person approves with another key that holds the approvals scope: it runs, once.
    const approver = await extraKey(runtime, m.accountId, { scopes: ['approvals', 'payments:read'] });
    const approved = await post(app, approver, `/v1/confirmations/${structured.confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json().result).toMatchObject({ object: 'payout', amount: 5000, to_address: ADDRESS_C });
    expect(await availableBalance(app, m.apiKey)).toBe(5000);
    expect((await post(app, approver, `/v1/confirmations/${structured.confirmation_id}/approve`)).statusCode).toBe(409);
    expect(await payoutRows()).toHaveLength(1);
    await expectLedgerBalanced(runtime);
  });

  it('a client with URL elicitation is sent the approval URL itself; declining changes nothing either', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const { client, elicitations } = await connect(m.apiKey, {
      capabilities: { elicitation: { form: {}, url: {} } },
      answer: 'decline',
    });
    const held = await client.callTool({ name: 'create_payout', arguments: { amount: 5000, to_address: ADDRESS_A } });
    const structured = held.structuredContent as { status: string; confirmation_id: string; approve_url: string };
    expect(structured.status).toBe('confirmation_required');
    expect(elicitations).toEqual([
      expect.objectContaining({ mode: 'url', url: structured.approve_url, elicitationId: structured.confirmation_id }),
    ]);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
    const row = await runtime.db
      .selectFrom('confirmations')
      .select('status')
      .where('id', '=', structured.confirmation_id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
  });

  it('without elicitation support the held result is the same, and a small payout to a known address runs', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 1000);
    // Known recipient through the api channel, so only the amount decides on the mcp channel.
    expect((await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_A })).statusCode).toBe(200);
    const { client } = await connect(m.apiKey);
    const small = await client.callTool({ name: 'create_payout', arguments: { amount: 10, to_address: ADDRESS_A } });
    expect(small.isError).toBeFalsy();
    expect(small.structuredContent).toMatchObject({ object: 'payout', status: 'queued', amount: 10 });
    const big = await client.callTool({ name: 'create_payout', arguments: { amount: 900, to_address: ADDRESS_C } });
    expect(big.structuredContent).toMatchObject({ status: 'confirmation_required' });
    expect(await availableBalance(app, m.apiKey)).toBe(1000 - 1 - 10);
  });

  it('every MCP tool call appears in the action log with channel mcp', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const { client } = await connect(m.apiKey);
    const calls: [string, Record<string, unknown>][] = [
      ['get_balance', {}],
      ['create_payment', { ...VALID_PAYMENT }],
      ['list_payments', {}],
      ['create_payment', { ...VALID_PAYMENT, amount: 'lots' }],
      ['create_payout', { amount: 5000, to_address: ADDRESS_C }],
      ['list_pending_confirmations', {}],
    ];
    for (const [name, args] of calls) {
      await client.callTool({ name, arguments: args });
      runtime.clock.advance(1000); // the test clock stands still otherwise: keep the log in call order
    }

    const logged = await mcpActions(m.accountId);
    expect(logged.map((a) => a.tool)).toEqual(calls.map(([name]) => name));
    expect(logged.map((a) => a.status)).toEqual(['executed', 'executed', 'executed', 'failed', 'held', 'executed']);
    const key = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', m.accountId)
      .executeTakeFirstOrThrow();
    expect(new Set(logged.map((a) => a.key_id))).toEqual(new Set([key.id]));

    const api = await app.inject({
      method: 'GET',
      url: '/agent/actions?channel=mcp&limit=100',
      headers: bearer(m.apiKey),
    });
    expect(api.statusCode).toBe(200);
    expect(
      api
        .json()
        .data.map((a: { tool: string }) => a.tool)
        .reverse(),
    ).toEqual(calls.map(([name]) => name));
    expect(api.json().data.every((a: { channel: string }) => a.channel === 'mcp')).toBe(true);
  });
});

describe('MCP resources', () => {
  it('payment://{id} reads one payment of this account; recent agent actions are listed; both read-only', async () => {
    const m = await testAccount(runtime);
    const other = await testAccount(runtime);
    const { client } = await connect(m.apiKey);
    const created = (await client.callTool({ name: 'create_payment', arguments: { ...VALID_PAYMENT } }))
      .structuredContent as {
      id: string;
    };
    const theirs = (await post(app, other.apiKey, '/v1/payments', { ...VALID_PAYMENT })).json() as { id: string };

    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual(['payment://{id}']);
    const listed = await client.listResources();
    expect(listed.resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining([`payment://${created.id}`, 'plainpay://agent-actions/recent']),
    );
    expect(listed.resources.map((r) => r.uri)).not.toContain(`payment://${theirs.id}`);

    const read = await client.readResource({ uri: `payment://${created.id}` });
    expect(read.contents[0]).toMatchObject({ uri: `payment://${created.id}`, mimeType: 'application/json' });
    expect(JSON.parse(textContent(read.contents[0]))).toMatchObject({ id: created.id, object: 'payment' });

    await expect(client.readResource({ uri: `payment://${theirs.id}` })).rejects.toMatchObject({ code: -32002 });

    const actions = await client.readResource({ uri: 'plainpay://agent-actions/recent' });
    const data = JSON.parse(textContent(actions.contents[0])).data as { tool: string; channel: string }[];
    expect(data[0]).toMatchObject({ tool: 'create_payment', channel: 'mcp' });

    // A key without the agent scope does not get the action log resource.
    const narrow = await extraKey(runtime, m.accountId, { scopes: ['payments:read'] });
    const { client: narrowClient } = await connect(narrow);
    const narrowList = await narrowClient.listResources();
    expect(narrowList.resources.map((r) => r.uri)).not.toContain('plainpay://agent-actions/recent');
  });
});

describe('MCP sessions', () => {
  const rpc = (headers: Record<string, string>, body: unknown, method = 'POST') =>
    fetch(mcpUrl, {
      method,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
    });

  it('a session belongs to the key that opened it', async () => {
    const m = await testAccount(runtime);
    const { transport } = await connect(m.apiKey);
    const sibling = await extraKey(runtime, m.accountId);
    const res = await rpc(
      { ...bearer(sibling), 'mcp-session-id': transport.sessionId! },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    );
    expect(res.status).toBe(404);
    expect(((await res.json()) as RpcError).error.code).toBe(-32001);
  });

  it('answers transport problems as JSON-RPC errors', async () => {
    const m = await testAccount(runtime);
    const noSession = await rpc(bearer(m.apiKey), { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(noSession.status).toBe(400);
    expect(((await noSession.json()) as RpcError).error.code).toBe(-32000);
    const badJson = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        ...bearer(m.apiKey),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":',
    });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as RpcError).error.code).toBe(-32700);
    const text = await fetch(mcpUrl, {
      method: 'POST',
      headers: { ...bearer(m.apiKey), 'content-type': 'text/plain' },
      body: 'hi',
    });
    expect(text.status).toBe(415);
  });

  it('refuses a batch in which two requests share an id, before either runs', async () => {
    const m = await testAccount(runtime);
    const { transport } = await connect(m.apiKey);
    const before = (await mcpActions(m.accountId)).length;
    const call = { jsonrpc: '2.0', id: 'same', method: 'tools/call', params: { name: 'list_payments', arguments: {} } };
    const res = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-03-26' },
      [{ ...call, params: undefined }, call],
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as RpcError).error.code).toBe(-32600);
    expect(await mcpActions(m.accountId)).toHaveLength(before);
    // Ids of their own: both answered, on one stream.
    const batch = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-03-26' },
      [
        { ...call, id: 1 },
        { ...call, id: 2 },
      ],
    );
    expect(batch.status).toBe(200);
    const text = await batch.text();
    expect(text.match(/"id":[12]\b/g)?.sort()).toEqual(['"id":1', '"id":2']);
  });

  it('DELETE ends a session', async () => {
    const m = await testAccount(runtime);
    const { transport } = await connect(m.apiKey);
    const id = transport.sessionId!;
    const deleted = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      undefined,
      'DELETE',
    );
    expect(deleted.status).toBe(200);
    const after = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': id },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    );
    expect(after.status).toBe(404);
  });

  it('bounds sessions per key: opening one more closes the least recently used', async () => {
    const m = await testAccount(runtime);
    const opened: Connected[] = [];
    for (let i = 0; i < 17; i++) opened.push(await connect(m.apiKey));
    // Which one goes depends on which had a request or stream open at that moment (idle ones go
    // first, then the least recently used): exactly one of the first 16 is closed.
    const statuses: number[] = [];
    for (const session of opened.slice(0, 16)) {
      const res = await rpc(
        { ...bearer(m.apiKey), 'mcp-session-id': session.transport.sessionId! },
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      );
      statuses.push(res.status);
      await res.body?.cancel();
    }
    expect(statuses.filter((status) => status === 404)).toHaveLength(1);
    expect(statuses.filter((status) => status === 200)).toHaveLength(15);
    const last = await opened[16]!.client.listTools();
    expect(last.tools.length).toBeGreaterThan(0);
  });

  it('closes sessions idle longer than the limit (30 minutes)', async () => {
    const m = await testAccount(runtime);
    const plain = await rpc(bearer(m.apiKey), {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    const plainId = plain.headers.get('mcp-session-id')!;
    await plain.body?.cancel();
    expect(plainId).toBeTruthy();
    runtime.clock.advance(29 * 60_000);
    const fresh = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': plainId },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    );
    expect(fresh.status).toBe(202);
    runtime.clock.advance(31 * 60_000);
    const stale = await rpc(
      { ...bearer(m.apiKey), 'mcp-session-id': plainId },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    expect(stale.status).toBe(404);
  });
});
