import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  extraKey,
  testAccount,
  testApp,
  testRuntime,
  type TestAccount,
  type TestRuntime,
} from './support/harness.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

function post(url: string, key: string, payload?: object) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...bearer(key), ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload } : {}),
  });
}

describe('API keys', () => {
  it('POST /keys returns the secret once; it works; GET /keys never shows a secret or hash', async () => {
    const created = await post('/keys', merchant.apiKey, { name: 'ci', scopes: ['payments:read'] });
    expect(created.statusCode).toBe(200);
    const key = created.json();
    expect(key.secret).toMatch(/^sk_test_[0-9A-Za-z]{38}$/);
    expect(key.scopes).toEqual(['payments:read']);
    expect(key.livemode).toBe(false);

    const ping = await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key.secret) });
    expect(ping.json()).toMatchObject({ ok: true, account: merchant.accountId });

    const list = await app.inject({ method: 'GET', url: '/keys', headers: bearer(merchant.apiKey) });
    expect(list.statusCode).toBe(200);
    const entry = list.json().data.find((k: { id: string }) => k.id === key.id);
    expect(entry).toMatchObject({ id: key.id, name: 'ci', last4: key.secret.slice(-4), revoked: null });
    expect(list.body).not.toContain(key.secret);
    expect(list.body).not.toContain(merchant.apiKey);
    expect(list.body).not.toMatch(/secret_hash|"secret"/);
    const row = await runtime.db
      .selectFrom('api_keys')
      .select('secret_hash')
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    expect(list.body).not.toContain(row.secret_hash);
  });

  it('a revoked key is refused on its next request', async () => {
    const key = (await post('/keys', merchant.apiKey, {})).json();
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key.secret) })).statusCode).toBe(200);
    const revoked = await post(`/keys/${key.id}/revoke`, merchant.apiKey);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().revoked_at).toEqual(expect.any(String));
    // The name of the previous release, kept beside the new one for one release (docs/api.md).
    expect(revoked.json().revoked).toBe(revoked.json().revoked_at);
    const after = await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key.secret) });
    expect(after.statusCode).toBe(401);
    expect(after.json().error.type).toBe('authentication_error');
  });

  it('rotation issues a new key and keeps the old one until the chosen expiry', async () => {
    const old = (await post('/keys', merchant.apiKey, { name: 'rotating' })).json();
    const rotated = await post(`/keys/${old.id}/rotate`, merchant.apiKey, { expires_in_minutes: 10 });
    expect(rotated.statusCode).toBe(200);
    const { new_key, old_key } = rotated.json();
    expect(new_key.rotated_from).toBe(old.id);
    expect(new_key.name).toBe('rotating');
    expect(new Date(old_key.expires_at).getTime() - runtime.clock.now().getTime()).toBeGreaterThan(9 * 60_000);
    expect(old_key.expires).toBe(old_key.expires_at);
    for (const secret of [old.secret, new_key.secret]) {
      expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(secret) })).statusCode).toBe(200);
    }
    runtime.clock.advance(11 * 60_000);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(old.secret) })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(new_key.secret) })).statusCode).toBe(
      200,
    );
  });

  it('keys endpoints need the keys scope (403 error object)', async () => {
    const limited = await extraKey(runtime, merchant.accountId, { scopes: ['payments:read'] });
    const res = await app.inject({ method: 'GET', url: '/keys', headers: bearer(limited) });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.type).toBe('permission_error');
    expect(res.json().error.message).toContain("'keys'");
  });

  it('a key cannot mint a more powerful key', async () => {
    const keysOnly = await extraKey(runtime, merchant.accountId, { scopes: ['keys'] });
    const wider = await post('/keys', keysOnly, { scopes: ['payouts:write'] });
    expect(wider.statusCode).toBe(403);
    expect(wider.json().error.param).toBe('scopes');
    const live = await post('/keys', merchant.apiKey, { live: true });
    expect(live.statusCode).toBe(403);
    expect(live.json().error.param).toBe('live');
  });

  it("another account's key id is 404, not 403", async () => {
    const other = await testAccount(runtime);
    const key = (await post('/keys', other.apiKey, {})).json();
    const res = await post(`/keys/${key.id}/revoke`, merchant.apiKey);
    expect(res.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key.secret) })).statusCode).toBe(200);
  });

  it('rejects an unknown scope naming the field', async () => {
    const res = await post('/keys', merchant.apiKey, { scopes: ['everything'] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.param).toBe('scopes[0]');
  });
});

describe('managing keys never escalates', () => {
  it('a key with only the keys scope cannot rotate a more powerful key (and get its new secret)', async () => {
    const keysOnly = await extraKey(runtime, merchant.accountId, { scopes: ['keys'] });
    const full = (await post('/keys', merchant.apiKey, { name: 'powerful' })).json();
    const res = await post(`/keys/${full.id}/rotate`, keysOnly, {});
    expect(res.statusCode).toBe(403);
    expect(res.json().error.type).toBe('permission_error');
    expect(res.body).not.toContain('sk_test_');
  });

  it('records who created each key: the calling key, the caller of a rotation, or null for the operator', async () => {
    const creatorOf = async (id: string) =>
      (await runtime.db.selectFrom('api_keys').select('created_by_key').where('id', '=', id).executeTakeFirstOrThrow())
        .created_by_key;
    const first = await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .where('name', '=', 'first key')
      .executeTakeFirstOrThrow();
    expect(await creatorOf(first.id)).toBeNull();

    const agent = (await post('/keys', merchant.apiKey, { name: 'agent', scopes: ['keys', 'payments:read'] })).json();
    expect(await creatorOf(agent.id)).toBe(first.id);
    const reader = (await post('/keys', agent.secret, { scopes: ['payments:read'] })).json();
    expect(await creatorOf(reader.id)).toBe(agent.id);
    // The first key rotates the reader: the new key is the first key's creation, in the reader's lineage.
    const rotated = (await post(`/keys/${reader.id}/rotate`, merchant.apiKey, {})).json().new_key;
    expect(rotated.rotated_from).toBe(reader.id);
    expect(await creatorOf(rotated.id)).toBe(first.id);
  });

  it('keys are objects of one mode: a test key neither sees nor manages live keys, and the reverse', async () => {
    const live = await extraKey(runtime, merchant.accountId, { livemode: true });
    const list = async (key: string) =>
      (await app.inject({ method: 'GET', url: '/keys', headers: bearer(key) })).json().data as {
        id: string;
        livemode: boolean;
      }[];
    const testKeys = await list(merchant.apiKey);
    const liveKeys = await list(live);
    expect(testKeys.length).toBeGreaterThan(0);
    expect(testKeys.every((k) => !k.livemode)).toBe(true);
    expect(liveKeys.length).toBeGreaterThan(0);
    expect(liveKeys.every((k) => k.livemode)).toBe(true);
    const liveId = liveKeys[0]!.id;
    const testId = testKeys[0]!.id;
    for (const [caller, id] of [
      [merchant.apiKey, liveId],
      [live, testId],
    ] as const) {
      for (const action of ['rotate', 'revoke']) {
        const res = await post(`/keys/${id}/${action}`, caller, action === 'rotate' ? {} : undefined);
        expect(res.statusCode, `${action} ${id}`).toBe(404);
        expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'id' });
      }
    }
    // Nothing changed: both keys still work.
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(live) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(merchant.apiKey) })).statusCode).toBe(
      200,
    );
    // A live key may create a (lesser) test key; it is then listed under test keys.
    const created = await post('/keys', live, { live: false, name: 'from live' });
    expect(created.statusCode).toBe(200);
    expect((await list(merchant.apiKey)).map((k) => k.id)).toContain(created.json().id);
    expect((await list(live)).map((k) => k.id)).not.toContain(created.json().id);
  });
});
