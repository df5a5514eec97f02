import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOLS } from '../tools/registry.ts';
import { settlesBeforeHang } from './support/hang.ts';
import { bearer } from './support/harness.ts';
import { type RunningServer, startServer } from './support/server.ts';

const SCRIPT = new URL('../scripts/mcp-inspector-check.mjs', import.meta.url).pathname;

let server: RunningServer;
let stopped = false;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  if (!stopped) await server.stop();
});

function runCheck(url: string, apiKey: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SCRIPT, '--url', url], {
      env: { ...process.env, PLAINPAY_API_KEY: apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('the official MCP Inspector CLI against `plainpay serve`', () => {
  it('lists the tools (--strict) and calls get_balance', { timeout: 240_000 }, async () => {
    const { code, output } = await runCheck(`${server.url}/mcp`, server.demoKey);
    expect(output).toContain('MCP Inspector check passed.');
    expect(code, output).toBe(0);
    // The catalogue and the agent's two tools (agent_settle, agent_reply).
    expect(output).toMatch(new RegExp(`tools/list: ${TOOLS.length + 2} tools: .*get_balance`));
    expect(output).toContain('tools/call get_balance: {"object":"balance"');
  });

  it('fails the check with a wrong key', { timeout: 240_000 }, async () => {
    const { code, output } = await runCheck(`${server.url}/mcp`, 'sk_test_wrong');
    expect(code).toBe(1);
    expect(output).not.toContain('check passed');
  });

  it('shuts down promptly with MCP sessions and their streams still open', async () => {
    const client = new Client({ name: 'left-open', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: bearer(server.demoKey) },
      }),
    );
    await client.listTools();
    stopped = true;
    // An MCP session left open must not keep the server from stopping.
    expect(await settlesBeforeHang(server.stop())).toEqual({ settled: true, value: 0 });
    await client.close();
  });
});
