import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { checkLedgerInvariants } from '../../src/ledger/ledger.ts';
import type { AuthContext } from '../../src/http/plugins/auth.ts';
import type { Runtime } from '../../src/runtime.ts';
import { bearer } from './harness.ts';

export function post(
  app: FastifyInstance,
  key: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

export async function fund(app: FastifyInstance, key: string, amount: number): Promise<void> {
  const res = await post(app, key, '/v1/test_helpers/balance/fund', { amount });
  if (res.statusCode !== 200) throw new Error(`funding failed: ${res.body}`);
}

export async function availableBalance(app: FastifyInstance, key: string): Promise<number> {
  const res = await app.inject({ method: 'GET', url: '/v1/balance', headers: bearer(key) });
  return res.json().available[0].amount;
}

/** The ledger's invariants hold: every posting and asset balances, no balance is negative. */
export async function expectLedgerBalanced(runtime: Runtime): Promise<void> {
  const report = await checkLedgerInvariants(runtime.db);
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
}

export const ADDRESS_A = '0x1111111111111111111111111111111111111111';
export const ADDRESS_B = '0x2222222222222222222222222222222222222222';
export const ADDRESS_C = '0x3333333333333333333333333333333333333333';

/**
 * Reads the key's policy, lets `edit` change it, and PUTs it back; returns the PUT's response
 * (the caller asserts on it: a bad edit is a 400).
 */
// biome-ignore lint/suspicious/noExplicitAny: a policy document as JSON, edited freely by tests.
export async function editPolicy(app: FastifyInstance, key: string, edit: (policy: any) => void) {
  const policy = (await app.inject({ method: 'GET', url: '/v1/policy', headers: bearer(key) })).json().policy;
  edit(policy);
  return app.inject({
    method: 'PUT',
    url: '/v1/policy',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: JSON.stringify(policy),
  });
}

/** What the account's first (test-mode) key authenticates as: for calling tools and servers directly. */
export async function firstKeyAuth(runtime: Runtime, accountId: string): Promise<AuthContext> {
  const key = await runtime.db
    .selectFrom('api_keys')
    .select(['id', 'scopes', 'assistant'])
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return { accountId, keyId: key.id, livemode: false, scopes: new Set(key.scopes), assistant: key.assistant };
}
