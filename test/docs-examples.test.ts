import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from './support/server.ts';

const run = promisify(execFile);
const DOCS = new URL('../docs/', import.meta.url).pathname;

/** Every ```sh block with a curl in docs/*.md, in order: the docs promise each works as written. */
function curlBlocks(): Array<{ file: string; index: number; script: string }> {
  const blocks: Array<{ file: string; index: number; script: string }> = [];
  for (const file of readdirSync(DOCS).filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(`${DOCS}${file}`, 'utf8');
    let index = 0;
    for (const match of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
      if (/\bcurl\b/.test(match[1]!)) blocks.push({ file, index: index++, script: match[1]! });
    }
  }
  return blocks;
}

let server: RunningServer;

beforeAll(async () => {
  // A reader runs one example at a time; this file runs every example back to back with its own set-up calls
  // (a payment, a key, sometimes a settled payment) on the same demo key, which on a fast machine is
  // more than the default 100 requests a second. The limit is tested in test/rate-limit.test.ts.
  server = await startServer({ WEBHOOK_ALLOW_PRIVATE: '1', RATE_LIMIT_PER_SECOND: '100000' });
  // The reader funded the test balance (docs/api.md shows how) before trying payouts.
  await api('POST', '/v1/test_helpers/balance/fund', { amount: 100_000 });
}, 90_000);

afterAll(async () => {
  await server?.stop();
});

async function api(
  method: string,
  path: string,
  body?: unknown,
  key = server.demoKey,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** A payment paid on the sandbox rail and settled into the balance by the running worker. */
async function settledPayment(): Promise<string> {
  const payment = await api('POST', '/v1/payments', {
    amount: 10_000,
    currency: 'NGN',
    redirect_url: 'https://shop.example/x',
  });
  await api('POST', `/v1/test_helpers/payments/${payment.id}/pay`, { outcome: 'succeeded' });
  for (let i = 0; i < 100; i++) {
    const status = (await (await fetch(`${server.url}/checkout/${payment.id}`)).json()) as { status: string };
    if (status.status === 'settled') return String(payment.id);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`payment ${payment.id} did not settle`);
}

describe('curl examples in docs/', () => {
  const blocks = curlBlocks();

  it('finds the examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
  });

  it.each(blocks.map((b) => [`${b.file} #${b.index}`, b] as const))('%s works as written', async (_name, block) => {
    // The variables the docs tell the reader to set.
    const payment = await api('POST', '/v1/payments', {
      amount: 100,
      currency: 'NGN',
      redirect_url: 'https://shop.example/x',
    });
    const key = await api('POST', '/keys', { name: 'docs example' });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PLAINPAY_URL: server.url,
      PLAINPAY_API_KEY: server.demoKey,
      PAYMENT_ID: String(payment.id),
      KEY_ID: String(key.id),
    };
    if (block.script.includes('$SETTLED_PAYMENT_ID')) env.SETTLED_PAYMENT_ID = await settledPayment();
    if (block.script.includes('$PAYOUT_ID')) {
      const payout = await api('POST', '/v1/payouts', {
        amount: 1,
        to_address: '0x1111111111111111111111111111111111111111',
      });
      env.PAYOUT_ID = String(payout.id);
    }
    if (block.script.includes('$ENDPOINT_ID')) {
      const endpoint = await api('POST', '/v1/webhook_endpoints', {
        url: 'https://finance.example/hooks/plainpay',
        enabled_events: ['payout.settled'],
      });
      env.ENDPOINT_ID = String(endpoint.id);
    }
    if (block.script.includes('$CONFIRMATION_ID')) {
      const instruction = 'pay out 5000 USDC to 0x2222222222222222222222222222222222222222';
      // As docs/policy.md has it: an agent's key asks, and a person's key (not one the agent's key
      // made or rotated) approves.
      const agentKey = String(
        (await api('POST', '/keys', { name: 'ops agent', scopes: ['agent', 'payouts:write', 'payments:read'] })).secret,
      );
      const run = await api('POST', '/agent/settle', { instruction }, agentKey);
      env.CONFIRMATION_ID = String((run.confirmations as Array<{ id: string }>)[0]!.id);
      env.APPROVER_KEY = String((await api('POST', '/keys', { name: 'approver', scopes: ['approvals'] })).secret);
    }
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', block.script], { env });
    const outputs = stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(outputs.length).toBeGreaterThan(0);
    for (const output of outputs) expect(output.error, JSON.stringify(output)).toBeUndefined();
  });
});
