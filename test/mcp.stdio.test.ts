import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { startStdioBridge } from '../src/mcp/stdio-bridge.ts';
import { TOOLS } from '../tools/registry.ts';
import { bearer, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, ADDRESS_C, availableBalance, fund, post } from './support/money.ts';
import { VALID_PAYMENT } from './support/payments.ts';
import { CLI } from './support/server.ts';

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let mcpUrl: string;
const clients: Client[] = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  mcpUrl = `${await app.listen({ port: 0, host: '127.0.0.1' })}/mcp`;
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await chain.close();
});

/** A desktop assistant's view: the SDK Client spawning `plainpay mcp` and speaking stdio. */
async function connectStdio(key: string, options: { elicitation?: boolean } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--url', mcpUrl],
    env: { PATH: process.env.PATH ?? '', PLAINPAY_API_KEY: key },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const client = new Client(
    { name: 'desktop-assistant', version: '1.0.0' },
    { capabilities: options.elicitation ? { elicitation: {} } : {} },
  );
  const elicitations: ElicitRequest['params'][] = [];
  if (options.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(request.params);
      return { action: 'accept', content: {} };
    });
  }
  clients.push(client);
  await client.connect(transport);
  return { client, elicitations, stderr: () => stderr };
}

describe('plainpay mcp (stdio bridge)', () => {
  it('lists the catalogue and round-trips create_payment then get_payment', async () => {
    const m = await testAccount(runtime);
    const { client } = await connectStdio(m.apiKey);
    expect(client.getServerVersion()?.name).toBe('plainpay');
    const { tools } = await client.listTools();
    // The catalogue, then the agent's own tools (src/mcp/agent-tools.ts): a new account's key has `agent`.
    expect(tools.map((t) => t.name)).toEqual([...TOOLS.map((t) => t.name), 'agent_settle', 'agent_reply']);
    expect(tools.every((t) => t.inputSchema.type === 'object' && t.outputSchema?.type === 'object')).toBe(true);

    const created = await client.callTool({
      name: 'create_payment',
      arguments: { ...VALID_PAYMENT, reference: 'stdio-1' },
    });
    expect(created.isError).toBeFalsy();
    const payment = created.structuredContent as { id: string };
    expect(payment).toMatchObject({ object: 'payment', reference: 'stdio-1' });
    runtime.clock.advance(1000); // the test clock stands still otherwise: keep the log in call order
    const read = await client.callTool({ name: 'get_payment', arguments: { payment_id: payment.id } });
    expect(read.structuredContent).toEqual(payment);

    const logged = await runtime.db
      .selectFrom('agent_actions')
      .select(['tool', 'channel'])
      .where('account_id', '=', m.accountId)
      .orderBy('created_at')
      .execute();
    expect(logged).toEqual([
      { tool: 'create_payment', channel: 'mcp' },
      { tool: 'get_payment', channel: 'mcp' },
    ]);
  });

  it('relays the held-action notice; the client accepting it moves nothing', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10_000);
    const { client, elicitations } = await connectStdio(m.apiKey, { elicitation: true });
    const held = await client.callTool({ name: 'create_payout', arguments: { amount: 5000, to_address: ADDRESS_C } });
    expect(held.structuredContent).toMatchObject({ status: 'confirmation_required' });
    expect(elicitations).toHaveLength(1);
    expect(await availableBalance(app, m.apiKey)).toBe(10_000);
  });

  it('opens a new session by itself when the server has closed its session', async () => {
    const m = await testAccount(runtime);
    const { client, stderr } = await connectStdio(m.apiKey);
    expect((await client.listTools()).tools.length).toBe(TOOLS.length + 2);
    // 16 more sessions of the same key evict the bridge's (the least recently used).
    const others: Client[] = [];
    for (let i = 0; i < 16; i++) {
      const other = new Client({ name: 'other', version: '1' });
      await other.connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: bearer(m.apiKey) } }),
      );
      others.push(other);
    }
    clients.push(...others);
    const again = await client.callTool({ name: 'get_balance', arguments: {} });
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toMatchObject({ object: 'balance' });
    expect(stderr()).toContain('opened a new one');
  });

  it('passes the 401 message on to the client when the key is wrong', async () => {
    await expect(connectStdio('sk_test_wrong')).rejects.toThrow(/HTTP 401: Invalid API key/);
  });

  it('refuses to start without PLAINPAY_API_KEY, saying how to set it', async () => {
    const child = spawn(process.execPath, [CLI, 'mcp', '--url', mcpUrl], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('PLAINPAY_API_KEY is not set');
  });

  it('exits cleanly when the client closes stdin', async () => {
    const m = await testAccount(runtime);
    const child = spawn(process.execPath, [CLI, 'mcp', '--url', mcpUrl], {
      env: { PATH: process.env.PATH ?? '', PLAINPAY_API_KEY: m.apiKey },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const firstLine = new Promise<string>((resolve) => {
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
    });
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      })}\n`,
    );
    expect(JSON.parse(await firstLine)).toMatchObject({ id: 1, result: { serverInfo: { name: 'plainpay' } } });
    child.stdin.end();
    expect(await exited).toBe(0);
  });

  it('does not relay a number its double would change: 100.00000000000000001 is refused, not paid as 100', async () => {
    const m = await testAccount(runtime);
    await fund(app, m.apiKey, 10);
    expect((await post(app, m.apiKey, '/v1/payouts', { amount: 1, to_address: ADDRESS_A })).statusCode).toBe(200);
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const answers = new Map<unknown, { result?: { isError?: boolean }; error?: { code: number; message: string } }>();
    let buffered = '';
    stdout.on('data', (chunk) => {
      buffered += chunk;
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        const answer = JSON.parse(buffered.slice(0, at));
        answers.set(answer.id, answer);
        buffered = buffered.slice(at + 1);
      }
    });
    const answerTo = async (id: number) => {
      while (!answers.has(id)) await new Promise((resolve) => setTimeout(resolve, 10));
      return answers.get(id)!;
    };
    const bridge = await startStdioBridge({ url: new URL(mcpUrl), apiKey: m.apiKey, stdin, stdout, log: () => {} });
    try {
      stdin.write(
        `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n`,
      );
      await answerTo(1);
      stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
      const payout = (id: number, amount: string) =>
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"create_payout","arguments":{"amount":${amount},"to_address":"${ADDRESS_A}"}}}\n`;
      const before = await availableBalance(app, m.apiKey);
      stdin.write(payout(2, '100.00000000000000001'));
      stdin.write(payout(3, '1e0'));
      expect((await answerTo(2)).error).toMatchObject({ code: -32602 });
      expect((await answerTo(2)).error?.message).toContain('100.00000000000000001');
      expect((await answerTo(3)).error).toMatchObject({ code: -32602 });
      expect(await availableBalance(app, m.apiKey)).toBe(before);
      // A number written otherwise but with the same value goes on: 1.50 is paid as 1.5.
      stdin.write(payout(4, '1.50'));
      expect((await answerTo(4)).result?.isError).toBeFalsy();
      expect(await availableBalance(app, m.apiKey)).toBe(before - 1.5);
    } finally {
      await bridge.close();
    }
  });
});
