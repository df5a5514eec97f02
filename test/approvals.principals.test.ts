import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import { createPayout } from '../tools/create-payout.ts';
import { bearer, extraKey, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { availableBalance, editPolicy, fund, post } from './support/money.ts';

/**
 * Approval by another principal only (issue 14): the key that asked, its rotation lineage and the
 * keys it created (directly or through others) cannot decide its held action; a held action with
 * no recorded requester is decided on the dashboard only; a key revokes or rotates only keys
 * whose scopes it holds, and never rotates an approver of its own requests (issue 33).
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

const RECIPIENT = '0x7777777777777777777777777777777777777779';
const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

interface Key {
  id: string;
  secret: string;
}

/** A key created over the API with `creator`'s authority (POST /keys). */
async function createKey(creator: string, body: Record<string, unknown> = {}): Promise<Key> {
  const res = await post(app, creator, '/keys', body);
  expect(res.statusCode, res.body).toBe(200);
  return { id: res.json().id, secret: res.json().secret };
}

async function rotateKey(caller: string, keyId: string): Promise<Key> {
  const res = await post(app, caller, `/keys/${keyId}/rotate`, { expires_in_minutes: 60 });
  expect(res.statusCode, res.body).toBe(200);
  return { id: res.json().new_key.id, secret: res.json().new_key.secret };
}

/**
 * An account whose admin (its first key) created K, the ops agent's full key; the agent channel
 * holds any payout above 5 USDC, and the account holds 100 USDC.
 */
async function agentAccount(): Promise<{ accountId: string; admin: string; k: Key }> {
  const m = await testAccount(runtime);
  await fund(app, m.apiKey, 100);
  const put = await editPolicy(app, m.apiKey, (policy) => {
    policy.channels.agent.confirm_above = '5';
    policy.channels.agent.confirm_first_payout_to_new_recipient = false;
  });
  expect(put.statusCode, put.body).toBe(200);
  return { accountId: m.accountId, admin: m.apiKey, k: await createKey(m.apiKey, { name: 'ops agent' }) };
}

/** K asks the agent to pay out 6 USDC: held above the agent channel's limit. */
async function heldByAgent(k: string): Promise<string> {
  const run = await post(app, k, '/agent/settle', { instruction: `pay out 6 USDC to ${RECIPIENT}` });
  expect(run.statusCode, run.body).toBe(200);
  expect(run.json().status).toBe('confirmation_required');
  return run.json().confirmations[0].id;
}

function decide(key: string, confirmationId: string, decision: 'approve' | 'reject') {
  return post(app, key, `/v1/confirmations/${confirmationId}/${decision}`);
}

function expectNotAnotherPrincipal(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(403);
  expect(res.json().error).toMatchObject({ type: 'permission_error', code: 'permission_denied' });
  expect(res.json().error.message).toContain('cannot approve or reject it');
}

async function payoutsTo(accountId: string): Promise<unknown[]> {
  return runtime.db
    .selectFrom('payouts')
    .select('id')
    .where('account_id', '=', accountId)
    .where('to_address', '=', RECIPIENT)
    .execute();
}

async function expectStillPending(confirmationId: string, accountId: string): Promise<void> {
  const row = await runtime.db
    .selectFrom('confirmations')
    .select('status')
    .where('id', '=', confirmationId)
    .executeTakeFirstOrThrow();
  expect(row.status).toBe('pending');
  expect(await payoutsTo(accountId)).toHaveLength(0);
}

describe('the key that asked, its lineage and the keys it created cannot decide its held action', () => {
  it("the issue's first defect: K gets 403, and so does K' after K rotates itself (it used to get 200)", async () => {
    const { accountId, k } = await agentAccount();
    const confirmationId = await heldByAgent(k.secret);
    expectNotAnotherPrincipal(await decide(k.secret, confirmationId, 'approve'));

    const rotated = await rotateKey(k.secret, k.id);
    expectNotAnotherPrincipal(await decide(rotated.secret, confirmationId, 'approve'));
    expectNotAnotherPrincipal(await decide(rotated.secret, confirmationId, 'reject'));
    // Lineage goes both ways: a request by K' is not K's to decide either.
    const second = await heldByAgent(rotated.secret);
    expectNotAnotherPrincipal(await decide(k.secret, second, 'approve'));
    await expectStillPending(confirmationId, accountId);
  });

  it("the issue's second defect: a key K creates with scopes ['approvals'] gets 403", async () => {
    const { accountId, k } = await agentAccount();
    const confirmationId = await heldByAgent(k.secret);
    const created = await createKey(k.secret, { scopes: ['approvals'] });
    expectNotAnotherPrincipal(await decide(created.secret, confirmationId, 'approve'));
    expectNotAnotherPrincipal(await decide(created.secret, confirmationId, 'reject'));
    await expectStillPending(confirmationId, accountId);
  });

  it('a key created by a key K created gets 403, and so does a rotation of such a key, whoever rotated it', async () => {
    const { accountId, admin, k } = await agentAccount();
    const confirmationId = await heldByAgent(k.secret);
    const child = await createKey(k.secret, { scopes: ['keys', 'approvals'] });
    const grandchild = await createKey(child.secret, { scopes: ['approvals'] });
    expectNotAnotherPrincipal(await decide(grandchild.secret, confirmationId, 'approve'));
    // The admin (not related to K) rotates K's child: the new key is the admin's creation, but
    // it continues the lineage of a key K created.
    const childRotatedByAdmin = await rotateKey(admin, child.id);
    expectNotAnotherPrincipal(await decide(childRotatedByAdmin.secret, confirmationId, 'approve'));
    await expectStillPending(confirmationId, accountId);
  });

  it("a requester cannot rotate its own approver: 403, and the approver's key still approves (issue 33)", async () => {
    const { accountId, admin, k } = await agentAccount();
    const finance = await createKey(admin, { name: 'finance', scopes: ['approvals'] });
    const confirmationId = await heldByAgent(k.secret);
    // K holds every scope finance holds, but finance may approve K's requests: rotating it would
    // make its successor K's and expire finance's key, locking the approver out.
    const refused = await post(app, k.secret, `/keys/${finance.id}/rotate`, { expires_in_minutes: 0 });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().error).toMatchObject({ type: 'permission_error', param: 'id' });
    expect(refused.json().error.message).toContain('may approve the calling key');
    const successors = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('rotated_from', '=', finance.id)
      .execute();
    expect(successors).toEqual([]);
    await expectStillPending(confirmationId, accountId);
    // The dashboard offers K no rotate form for finance's key, and says why.
    const page = await app.inject({
      method: 'GET',
      url: `/dashboard/developers/keys/${finance.id}`,
      headers: { cookie: await signIn(k.secret) },
    });
    expect(page.body).toContain('Your key cannot rotate this key');
    expect(page.body).not.toContain('id="rotate-key"');

    const approved = await decide(finance.secret, confirmationId, 'approve');
    expect(approved.statusCode, approved.body).toBe(200);
    expect(await payoutsTo(accountId)).toHaveLength(1);
  });

  it("an approver's successor keeps its standing, whether it rotated itself or its creator rotated it", async () => {
    const { accountId, admin, k } = await agentAccount();
    const finance = await createKey(admin, { name: 'finance', scopes: ['keys', 'approvals'] });
    const first = await heldByAgent(k.secret);
    const second = await heldByAgent(k.secret);
    const selfRotated = await rotateKey(finance.secret, finance.id);
    const approved = await decide(selfRotated.secret, first, 'approve');
    expect(approved.statusCode, approved.body).toBe(200);
    const byCreator = await rotateKey(admin, selfRotated.id);
    const rejected = await decide(byCreator.secret, second, 'reject');
    expect(rejected.statusCode, rejected.body).toBe(200);
    expect(await payoutsTo(accountId)).toHaveLength(1);
  });

  it('an unrelated approvals key (created by the same admin as K) approves: 200, and the money moves once', async () => {
    const { accountId, admin, k } = await agentAccount();
    const finance = await createKey(admin, { name: 'finance', scopes: ['approvals'] });
    const confirmationId = await heldByAgent(k.secret);
    const approved = await decide(finance.secret, confirmationId, 'approve');
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json().confirmation).toMatchObject({ status: 'executed', decided_by_key: finance.id });
    expect(approved.json().result).toMatchObject({ object: 'payout', amount: 6 });
    expect((await decide(finance.secret, confirmationId, 'approve')).statusCode).toBe(409);
    expect(await payoutsTo(accountId)).toHaveLength(1);
    expect(await availableBalance(app, admin)).toBe(94);
  });
});

// The dashboard through inject: sign in with a key, then post its forms with the CSRF token.
async function signIn(key: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
    payload: new URLSearchParams({ api_key: key }).toString(),
  });
  expect(res.statusCode, res.body).toBe(303);
  const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []).join('\n');
  const match = /plainpay_session=([^;]+)/.exec(cookies);
  if (!match) throw new Error('no session cookie');
  return `plainpay_session=${match[1]}`;
}

async function submit(cookie: string, url: string, from: string) {
  const page = await app.inject({ method: 'GET', url: from, headers: { cookie } });
  const token = /name="csrf_token" value="([^"]+)"/.exec(page.body)?.[1];
  if (!token) throw new Error(`no csrf token on ${from}`);
  return app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
    payload: new URLSearchParams({ csrf_token: token }).toString(),
  });
}

describe('a held action with no recorded requester', () => {
  /** Held for the service itself (no key asked): an agent-channel payout by an actor without a key. */
  async function heldWithoutRequester(accountId: string): Promise<string> {
    const held = await executeTool(
      createPayout,
      { amount: 6, to_address: RECIPIENT },
      {
        runtime,
        actor: { accountId, livemode: false, keyId: null, scopes: new Set(['payouts:write']), channel: 'agent' },
      },
    );
    if (held.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${held.kind}`);
    const row = await runtime.db
      .selectFrom('confirmations')
      .select('requested_by_key')
      .where('id', '=', held.confirmation.confirmation_id)
      .executeTakeFirstOrThrow();
    expect(row.requested_by_key).toBeNull();
    return held.confirmation.confirmation_id;
  }

  it('no key can approve or reject it (403 naming the dashboard); a signed-in approver on the dashboard can', async () => {
    const { accountId, admin } = await agentAccount();
    const finance = await extraKey(runtime, accountId, { scopes: ['approvals'] });
    const confirmationId = await heldWithoutRequester(accountId);
    for (const key of [admin, finance]) {
      for (const decision of ['approve', 'reject'] as const) {
        const res = await decide(key, confirmationId, decision);
        expect(res.statusCode, res.body).toBe(403);
        expect(res.json().error.type).toBe('permission_error');
        expect(res.json().error.message).toContain('decide it on the dashboard');
      }
    }
    await expectStillPending(confirmationId, accountId);

    const url = `/dashboard/confirmations/${confirmationId}`;
    const approved = await submit(await signIn(finance), `${url}/approve`, url);
    expect(approved.statusCode, approved.body).toBe(303);
    expect(approved.headers.location).toBe(`${url}?done=approved`);
    expect(await payoutsTo(accountId)).toHaveLength(1);
    expect(await availableBalance(app, admin)).toBe(94);
  });

  it('on the dashboard the lineage rule still applies to the signed-in key when there is a requester', async () => {
    const { accountId, k } = await agentAccount();
    const confirmationId = await heldByAgent(k.secret);
    const rotated = await rotateKey(k.secret, k.id);
    const url = `/dashboard/confirmations/${confirmationId}`;
    const refused = await submit(await signIn(rotated.secret), `${url}/approve`, url);
    // Post-redirect-get: back to the page, which names the refusal by its code.
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe(`${url}?failed=approve&code=permission_denied`);
    await expectStillPending(confirmationId, accountId);
  });
});

describe('a key revokes or rotates only keys whose scopes it holds', () => {
  const ping = async (key: string) =>
    (await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key) })).statusCode;

  it("a keys-only key cannot revoke the account's full key (403 naming why), and the full key still works", async () => {
    const m = await testAccount(runtime);
    const keysOnly = await createKey(m.apiKey, { scopes: ['keys'] });
    const fullId = (
      await runtime.db
        .selectFrom('api_keys')
        .select('id')
        .where('account_id', '=', m.accountId)
        .where('name', '=', 'first key')
        .executeTakeFirstOrThrow()
    ).id;
    const res = await post(app, keysOnly.secret, `/keys/${fullId}/revoke`);
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().error).toMatchObject({ type: 'permission_error', param: 'id' });
    expect(res.json().error.message).toContain('holds scopes the calling key does not');
    expect(res.json().error.message).toContain('approvals');
    expect(await ping(m.apiKey)).toBe(200);

    // The same on the dashboard: no forms, and a forged post is refused.
    const session = await signIn(keysOnly.secret);
    const page = await app.inject({
      method: 'GET',
      url: `/dashboard/developers/keys/${fullId}`,
      headers: { cookie: session },
    });
    expect(page.body).toContain('Your key cannot rotate or revoke this key');
    expect(page.body).not.toContain('id="revoke-key"');
    const forged = await submit(session, `/dashboard/developers/keys/${fullId}/revoke`, '/dashboard/developers');
    expect(forged.statusCode).toBe(403);
    expect(await ping(m.apiKey)).toBe(200);
  });

  it('a full key can still revoke a lesser key', async () => {
    const m = await testAccount(runtime);
    const lesser = await createKey(m.apiKey, { scopes: ['payments:read', 'keys'] });
    const res = await post(app, m.apiKey, `/keys/${lesser.id}/revoke`);
    expect(res.statusCode, res.body).toBe(200);
    expect(await ping(lesser.secret)).toBe(401);
    expect(await ping(m.apiKey)).toBe(200);
  });
});
