import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { createLogger } from '../src/core/logger.ts';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { ADDRESS_B, ADDRESS_C, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { openInjectedMcpSession } from './support/mcp.ts';

/**
 * No API key secret, webhook signing secret, dashboard session id or master key is ever written to
 * a log line or to the database. The main flows run once against a runtime whose logger writes
 * every line (level trace) to memory, through the hosts and channels a secret passes: account
 * creation, keys issued, rotated and revoked over the API and the dashboard, the webhook secret
 * read and rotated on both, payments and the checkout page, payouts, a held action and its
 * approval, the agent, MCP, and the failure paths that quote their input (a mistyped key, a secret
 * in a body, in a query, in X-Request-Id). Then every log line and every row of every table is
 * searched for every secret seen.
 */

const lines: string[] = [];
const capture = new Writable({
  write(chunk, _encoding, done) {
    lines.push(String(chunk));
    done();
  },
});

const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');
const FULL_KEY = /sk_(live|test)_[0-9A-Za-z]{38}/;
/** A signing secret is whsec_ and 32+ base64 characters; a webhook_secrets row id (whsec_ + 22 base62) is not one. */
const FULL_WEBHOOK_SECRET = /whsec_[A-Za-z0-9+/=]{32,}/;

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let checkout: FastifyInstance;
let merchant: TestAccount;
/** Every secret the flows below get to see; none may be logged or stored. */
const secrets = new Set<string>();

function keep(value: unknown): void {
  if (typeof value === 'string' && value.length > 0) secrets.add(value);
}

/** Collects the secrets a response shows (a new key, a webhook secret, a key on a dashboard page). */
function harvest(res: LightMyRequestResponse): LightMyRequestResponse {
  for (const match of res.body.matchAll(/sk_(?:live|test)_[0-9A-Za-z]{38}|whsec_[A-Za-z0-9+/=]{32,}/g)) keep(match[0]);
  return res;
}

function form(fields: Record<string, string | string[]>): string {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
  }
  return body.toString();
}

async function runMainFlows(): Promise<void> {
  merchant = await testAccount(runtime);
  keep(merchant.apiKey);
  keep(merchant.webhookSecret);
  const key = merchant.apiKey;
  const json = (url: string, body: unknown, k = key) => post(app, k, url, body).then(harvest);

  // Keys over the API: issue (test and live), rotate, revoke, list.
  expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key) })).statusCode).toBe(200);
  const testKey = (await json('/keys', { name: 'server' })).json();
  const approver = (await json('/keys', { name: 'approver', scopes: ['approvals', 'payments:read'] })).json();
  const rotated = (await json(`/keys/${testKey.id}/rotate`, { expires_in_minutes: 0 })).json();
  expect(rotated.new_key.secret).toMatch(FULL_KEY);
  await json(`/keys/${rotated.new_key.id}/revoke`, undefined);
  harvest(await app.inject({ method: 'GET', url: '/keys', headers: bearer(key) }));

  // The webhook secret: read and rotate.
  harvest(await app.inject({ method: 'GET', url: '/v1/webhook_secret', headers: bearer(key) }));
  await json('/v1/webhook_secret/rotate', { grace_period_minutes: 60 });
  harvest(await app.inject({ method: 'GET', url: '/v1/webhook_secret', headers: bearer(key) }));

  // Payments, the test helper and the checkout page.
  const payment = await createPayment(app, key, { metadata: { order: 1 }, reference: 'order-1' });
  expect((await payPayment(app, key, payment.id)).statusCode).toBe(200);
  const pending = await createPayment(app, key);
  expect((await checkout.inject({ method: 'GET', url: `/pay/${pending.id}` })).statusCode).toBe(200);
  const paid = await checkout.inject({
    method: 'POST',
    url: `/pay/${pending.id}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: 'outcome=succeeded',
  });
  expect(paid.statusCode).toBe(303);
  await checkout.inject({ method: 'GET', url: `/pay/${pending.id}/status` });

  // Payouts: one that runs, one the policy holds (over MCP), approved by another principal.
  await fund(app, key, 10_000);
  expect((await json('/v1/payouts', { amount: 1, to_address: ADDRESS_B })).statusCode).toBe(200);
  // The assistant's key asks; a sibling key approves (a key it made could not: docs/policy.md).
  const assistant = (await json('/keys', { name: 'assistant' })).json();
  const session = await openInjectedMcpSession(app, assistant.secret, 'secrets');
  const held = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: session,
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'create_payout', arguments: { amount: 5000, to_address: ADDRESS_C, memo: `not a secret` } },
    }),
  });
  const confirmation = /"confirmation_id":"(conf_[0-9A-Za-z]+)"/.exec(held.body.replaceAll('\\"', '"'))?.[1];
  expect(confirmation, held.body).toBeDefined();
  expect((await json(`/v1/confirmations/${confirmation}/approve`, undefined, approver.secret)).statusCode).toBe(200);
  // JSON-RPC the transport refuses, quoting a secret. (A secret given as a tool argument is the
  // caller's data: the audit trail keeps what an MCP client sent, by design, so it is not sent here.)
  await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: session,
    payload: JSON.stringify({ jsonrpc: '1.0', id: key }),
  });
  await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: session,
    payload: `{"jsonrpc":"2.0","id":1,"method":${key}}`,
  });

  // The agent, with an instruction that pays out.
  expect((await json('/agent/settle', { instruction: `pay out 1 USDC to ${ADDRESS_B}` })).statusCode).toBe(200);

  // The dashboard: sign in with a key, create a key (its secret is on the page), show and rotate the webhook secret.
  const signIn = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: form({ api_key: key }),
  });
  expect(signIn.statusCode).toBe(303);
  const cookieHeader = String(signIn.headers['set-cookie']);
  const cookie = /plainpay_session=[^;]+/.exec(cookieHeader)![0];
  keep(cookie.split('=')[1]);
  const developers = harvest(
    await app.inject({ method: 'GET', url: '/dashboard/developers?show=webhook-secret', headers: { cookie } }),
  );
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(developers.body)![1]!;
  const submit = (url: string, fields: Record<string, string | string[]>) =>
    app
      .inject({
        method: 'POST',
        url,
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
        payload: form({ csrf_token: csrf, ...fields }),
      })
      .then(harvest);
  const created = await submit('/dashboard/developers/keys', {
    name: 'from the dashboard',
    mode: 'test',
    scopes: ['payments:read'],
  });
  expect(created.body).toMatch(FULL_KEY);
  await submit('/dashboard/developers/webhook-secret/rotate', { grace_period_minutes: '60' });
  harvest(await app.inject({ method: 'GET', url: '/dashboard/developers?show=webhook-secret', headers: { cookie } }));
  // A wrong key on the sign-in form: one character off a real one.
  await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: form({ api_key: `${key.slice(0, -1)}x` }),
  });

  // Failure paths that carry a secret where it does not belong.
  const almost = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
  keep(almost);
  await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(almost) });
  await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(rotated.new_key.secret) });
  await app.inject({ method: 'GET', url: `/v1/ping?api_key=${key}`, headers: { 'x-request-id': key.slice(0, 64) } });
  await app.inject({ method: 'GET', url: '/v1/ping', headers: { ...bearer(key), 'x-request-id': key } });
  await json('/v1/payments', { [key]: merchant.webhookSecret, amount: key });
  await app.inject({
    method: 'POST',
    url: '/v1/payments',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: `{"amount": ${key}}`,
  });
  await json('/agent/settle', {
    instruction: 'what is my balance?',
    api_key: key,
    webhook_secret: merchant.webhookSecret,
  });
  await app.inject({ method: 'GET', url: `/v1/payments/${key}`, headers: bearer(key) });
  await app.inject({ method: 'GET', url: `/nope/${key}?secret=${merchant.webhookSecret}`, headers: bearer(key) });

  // An internal error whose message quotes a secret, logged the way the error handlers log one.
  runtime.logger.error(
    { err: new Error(`could not use ${key}`, { cause: new Error(merchant.webhookSecret) }) },
    'request failed',
  );
  runtime.logger.warn({ detail: { nested: [key] }, note: `the secret ${merchant.webhookSecret}` }, 'nested secrets');
  runtime.logger.child({ key }).info('a child logger bound to a secret');
}

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({ PLAINPAY_MASTER_KEY: MASTER_KEY }, { chain, logger: createLogger('trace', capture) });
  keep(MASTER_KEY);
  app = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  await runMainFlows();
});

afterAll(async () => {
  await checkout.close();
  await chain.close();
});

/** The forms a secret could take in text: itself, its random part, and base64 of either. */
function formsOf(secret: string): string[] {
  const body = secret.replace(/^(sk_(live|test)_|whsec_|plainpay_session=)/, '');
  return [secret, body, Buffer.from(secret).toString('base64'), Buffer.from(body).toString('base64')].filter(
    (form) => form.length >= 16,
  );
}

describe('secrets in logs', () => {
  it('the flows ran and were logged: requests, errors, MCP and the checkout host', () => {
    const log = lines.join('');
    expect(secrets.size).toBeGreaterThanOrEqual(8);
    expect(log).toContain('"msg":"request"');
    expect(log).toContain('"msg":"checkout request"');
    expect(log).toContain('"url":"/mcp"');
    expect(log).toContain('request failed');
    expect(log).toContain('[REDACTED]');
  });

  it('no log line holds an API key secret, a webhook secret, a session id or the master key', () => {
    const log = lines.join('');
    expect(log).not.toMatch(FULL_KEY);
    expect(log).not.toMatch(FULL_WEBHOOK_SECRET);
    for (const secret of secrets) {
      for (const form of formsOf(secret)) {
        const at = log.indexOf(form);
        expect(
          at,
          `a secret (${secret.slice(0, 12)}…) is in the log: …${log.slice(Math.max(0, at - 200), at + 60)}`,
        ).toBe(-1);
      }
    }
  });

  it('the logger masks secrets in error objects, causes, nested fields, bindings and messages', () => {
    const own: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _e, done) {
          own.push(String(chunk));
          done();
        },
      }),
    );
    const key = `sk_live_${'A1b2'.repeat(8)}Zz9Yy8`;
    const webhook = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    logger.error({ err: new Error(`failed for ${key}`, { cause: new Error(webhook) }) }, 'boom');
    logger.info({ a: { b: [{ c: key }] }, headers: { authorization: `Bearer ${key}` } }, `message with ${webhook}`);
    logger.child({ bound: key }).warn('bound');
    logger.info(`${key} at the start, and ${webhook} at the end`);
    const text = own.join('');
    expect(own).toHaveLength(4);
    expect(text).not.toContain(key.slice(12));
    expect(text).not.toContain(webhook.slice(10));
    expect(text).toContain('sk_live_A1b2[REDACTED]');
    expect(text).toContain('whsec_[REDACTED]');
  });
});

describe('secrets in the database', () => {
  it('no table holds a secret in clear, after every flow (keys, webhook secrets, sessions, confirmations, the action log, idempotency records)', async () => {
    const tables = await sql<{
      t: string;
    }>`select tablename as t from pg_tables where schemaname = 'public' order by 1`.execute(runtime.db);
    expect(tables.rows.map((r) => r.t)).toEqual(
      expect.arrayContaining([
        'api_keys',
        'webhook_secrets',
        'dashboard_sessions',
        'confirmations',
        'action_log',
        'agent_actions',
        'idempotency_keys',
        'agent_runs',
        'events',
      ]),
    );
    const parts: string[] = [];
    for (const { t } of tables.rows) {
      const rows = await sql<{ r: string }>`select t::text as r from ${sql.table(t)} t`.execute(runtime.db);
      parts.push(`-- ${t}`, ...rows.rows.map((r) => r.r));
    }
    const dump = parts.join('\n');
    expect(dump).toContain(merchant.accountId);
    // The flows put these where they belong: hashes, ciphertext, ids.
    const keyRows = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .execute();
    expect(keyRows.length).toBeGreaterThanOrEqual(5);
    expect(dump).not.toMatch(FULL_KEY);
    expect(dump).not.toMatch(FULL_WEBHOOK_SECRET);
    for (const secret of secrets) {
      for (const form of formsOf(secret)) {
        const at = dump.indexOf(form);
        const table = at === -1 ? '' : dump.slice(0, at).split('\n-- ').pop()!.split('\n')[0]!;
        expect(at, `a secret (${secret.slice(0, 12)}…) is stored in ${table}`).toBe(-1);
      }
    }
  });
});
