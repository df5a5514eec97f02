#!/usr/bin/env node
// Checks a running plainpay server's /mcp endpoint with the official MCP Inspector CLI
// (@modelcontextprotocol/inspector, a dev dependency): tools/list with --strict (schema
// portability; exits non-zero on error-severity problems), then tools/call get_balance.
//
//   PLAINPAY_API_KEY=sk_test_... node scripts/mcp-inspector-check.mjs [--url http://localhost:3000/mcp]
//
// The Inspector declares Node >= 22.19 while plainpay runs on Node 20+, so it runs under Node 22
// from the npm registry (`npx -p node@22`, cached after the first run). The key goes into a
// private temporary config file, not onto the command line where `ps` would show it.
// test/mcp.inspector.test.ts runs this against `plainpay serve`, so CI runs it with `npm test`.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const INSPECTOR = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js', import.meta.url),
);
const TIMEOUT_MS = 120_000;

/** Runs the Inspector CLI once under Node 22; resolves with its parsed JSON output. */
function inspect(configPath, stateDir, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'npx',
      [
        '--prefer-offline',
        '-y',
        '-p',
        'node@22',
        'node',
        INSPECTOR,
        '--cli',
        '--config',
        configPath,
        '--server',
        'plainpay',
        ...args,
      ],
      {
        env: {
          ...process.env,
          // Keep the Inspector's state out of $HOME, and its secrets in memory.
          MCP_STORAGE_DIR: join(stateDir, 'storage'),
          MCP_INSPECTOR_SECRET_STORE: 'memory',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`inspector ${args.join(' ')} exited with ${code ?? signal}\n${stderr}${stdout}`));
        return;
      }
      try {
        resolve({ result: JSON.parse(stdout), stderr });
      } catch {
        reject(new Error(`inspector ${args.join(' ')} printed no JSON:\n${stdout}\n${stderr}`));
      }
    });
  });
}

/** Returns a list of problems (empty when the server passes). */
export async function checkWithInspector({ url, apiKey, log = (line) => console.log(line) }) {
  const stateDir = mkdtempSync(join(tmpdir(), 'plainpay-inspector-'));
  const configPath = join(stateDir, 'mcp.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      mcpServers: { plainpay: { type: 'streamable-http', url, headers: { Authorization: `Bearer ${apiKey}` } } },
    }),
    { mode: 0o600 },
  );
  const problems = [];
  try {
    const listed = await inspect(configPath, stateDir, ['--method', 'tools/list', '--strict']);
    const tools = listed.result.tools ?? [];
    log(`tools/list: ${tools.length} tools: ${tools.map((tool) => tool.name).join(', ')}`);
    if (!tools.some((tool) => tool.name === 'get_balance')) problems.push('tools/list has no get_balance');
    for (const tool of tools) {
      if (tool.inputSchema?.type !== 'object') problems.push(`${tool.name}: inputSchema is not an object schema`);
      if (tool.outputSchema?.type !== 'object') problems.push(`${tool.name}: no outputSchema`);
      if (typeof tool.annotations?.readOnlyHint !== 'boolean') problems.push(`${tool.name}: no readOnlyHint`);
    }

    const called = await inspect(configPath, stateDir, ['--method', 'tools/call', '--tool-name', 'get_balance']);
    const balance = called.result.structuredContent;
    log(`tools/call get_balance: ${JSON.stringify(balance)}`);
    if (called.result.isError) problems.push(`get_balance failed: ${JSON.stringify(called.result.content)}`);
    if (balance?.object !== 'balance' || !Array.isArray(balance.available))
      problems.push('get_balance returned no balance');
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { url: { type: 'string', default: 'http://localhost:3000/mcp' } } });
  const apiKey = process.env.PLAINPAY_API_KEY;
  if (!apiKey) {
    console.error('Set PLAINPAY_API_KEY to a key of the server (e.g. the demo key `plainpay serve` prints).');
    process.exit(2);
  }
  try {
    const problems = await checkWithInspector({ url: values.url, apiKey });
    if (problems.length > 0) {
      console.error(`MCP Inspector check failed:\n- ${problems.join('\n- ')}`);
      process.exit(1);
    }
    console.log('MCP Inspector check passed.');
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
