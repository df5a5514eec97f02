import type { FastifyInstance } from 'fastify';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { beforeAll, describe, expect, it } from 'vitest';
import { runDeliveryBatch } from '../src/webhooks/delivery-worker.ts';
import { verifyWebhook } from '../src/webhooks/signer.ts';
import {
  bearer,
  extraKey,
  type TestAccount,
  type TestRuntime,
  testAccount,
  testApp,
  testRuntime,
} from './support/harness.ts';
import { startReceiver, writeEvent } from './support/webhooks.ts';

let runtime: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  runtime = await testRuntime({ WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
});

function call(method: 'GET' | 'POST', url: string, key: string, payload?: unknown) {
  return app.inject({
    method,
    url,
    headers: { ...bearer(key), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
}

function deliver(accountId: string): Promise<number> {
  return runDeliveryBatch(runtime, { accountIds: [accountId] });
}

describe('GET /v1/webhook_secret and rotation', () => {
  it("returns the account's current secret, the one its deliveries are signed with", async () => {
    const merchant = await testAccount(runtime);
    const res = await call('GET', '/v1/webhook_secret', merchant.apiKey);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      object: 'webhook_secret',
      secret: merchant.webhookSecret,
      created: expect.any(String),
      previous_secrets: [],
    });
  });

  it('each mode has its own secret: a test key can neither read nor rotate the one that signs live events', async () => {
    const merchant = await testAccount(runtime);
    const live = await extraKey(runtime, merchant.accountId, { livemode: true });
    const liveSecret: string = (await call('GET', '/v1/webhook_secret', live)).json().secret;
    expect(liveSecret).toMatch(/^whsec_/);
    expect(liveSecret).not.toBe(merchant.webhookSecret);
    const rotated = await call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, { grace_period_minutes: 0 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.body).not.toContain(liveSecret);
    expect((await call('GET', '/v1/webhook_secret', live)).json()).toMatchObject({
      secret: liveSecret,
      previous_secrets: [],
    });

    // A live event is signed with the live secret only; a test event with the test secret only.
    const receiver = await startReceiver();
    await writeEvent(runtime, { accountId: merchant.accountId, livemode: true, webhookUrl: receiver.url });
    await writeEvent(runtime, { accountId: merchant.accountId, livemode: false, webhookUrl: receiver.url });
    expect(await deliver(merchant.accountId)).toBe(2);
    const testSecret: string = rotated.json().secret;
    for (const request of receiver.received) {
      const headers = request.headers as Record<string, string>;
      const isLive = JSON.parse(request.body).livemode === true;
      const at = Number(headers['webhook-timestamp']);
      const verify = (secret: string) => verifyWebhook({ body: request.body, headers, secrets: [secret], now: at }).ok;
      expect(verify(liveSecret)).toBe(isLive);
      expect(verify(testSecret)).toBe(!isLive);
    }
    expect(receiver.received.map((r) => JSON.parse(r.body).livemode).sort()).toEqual([false, true]);
  });

  it('needs the webhooks scope and a key', async () => {
    const merchant = await testAccount(runtime);
    const narrow = await extraKey(runtime, merchant.accountId, { scopes: ['payments:read'] });
    for (const [method, url] of [
      ['GET', '/v1/webhook_secret'],
      ['POST', '/v1/webhook_secret/rotate'],
      ['GET', '/v1/events'],
    ] as const) {
      const res = await call(method, url, narrow);
      expect(res.statusCode, url).toBe(403);
      expect(res.json().error.type).toBe('permission_error');
      const anonymous = await app.inject({ method, url });
      expect(anonymous.statusCode).toBe(401);
    }
  });

  it('validates the rotate body and names the field', async () => {
    const merchant = await testAccount(runtime);
    for (const body of [
      { grace_period_minutes: -1 },
      { grace_period_minutes: 10_081 },
      { grace_period_minutes: 1.5 },
      { grace_period_minutes: '60' },
    ]) {
      const res = await call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'grace_period_minutes' });
    }
    const unknown = await call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, { grace: 5 });
    expect(unknown.json().error.param).toBe('grace');
    // Nothing rotated.
    expect((await call('GET', '/v1/webhook_secret', merchant.apiKey)).json().secret).toBe(merchant.webhookSecret);
  });

  it('during the grace period every delivery verifies with the old and the new secret; after it, with the new only', async () => {
    const merchant = await testAccount(runtime);
    const receiver = await startReceiver();
    const now = runtime.clock.now().getTime();
    const rotated = await call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, {});
    expect(rotated.statusCode, rotated.body).toBe(200);
    const view = rotated.json();
    const fresh: string = view.secret;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(merchant.webhookSecret);
    // Default grace: 24 h. The previous secret's value is not shown again.
    expect(view.previous_secrets).toHaveLength(1);
    const expiresAt = Date.parse(view.previous_secrets[0].expires_at);
    expect(Math.abs(expiresAt - (now + 24 * 3_600_000))).toBeLessThan(60_000);
    expect(rotated.body).not.toContain(merchant.webhookSecret);
    expect((await call('GET', '/v1/webhook_secret', merchant.apiKey)).json()).toMatchObject({
      secret: fresh,
      previous_secrets: [{ expires_at: view.previous_secrets[0].expires_at }],
    });

    const during = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await deliver(merchant.accountId)).toBe(1);
    const [request] = receiver.received;
    expect(request!.headers['webhook-id']).toBe(during.id);
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [merchant.webhookSecret, fresh]) {
      expect(new StandardWebhook(secret).verify(request!.body, request!.headers as never)).toMatchObject({
        id: during.id,
      });
      expect(new SvixWebhook(secret).verify(request!.body, request!.headers as never)).toMatchObject({
        id: during.id,
      });
    }

    // After the grace period, only the new secret signs.
    runtime.clock.advance(24 * 3_600_000 + 1000);
    const after = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await deliver(merchant.accountId)).toBe(1);
    const second = receiver.received[1]!;
    expect(second.headers['webhook-id']).toBe(after.id);
    const headers = second.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(1);
    const at = Number(headers['webhook-timestamp']);
    expect(verifyWebhook({ body: second.body, headers, secrets: [fresh], now: at }).ok).toBe(true);
    expect(verifyWebhook({ body: second.body, headers, secrets: [merchant.webhookSecret], now: at }).ok).toBe(false);
    expect((await call('GET', '/v1/webhook_secret', merchant.apiKey)).json().previous_secrets).toEqual([]);
  });

  it('grace_period_minutes 0 retires the old secret at once; the secret is sealed at rest', async () => {
    const merchant = await testAccount(runtime);
    const res = await call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, { grace_period_minutes: 0 });
    expect(res.json().previous_secrets).toEqual([]);
    const rows = await runtime.db
      .selectFrom('webhook_secrets')
      .select('secret_ciphertext')
      .where('account_id', '=', merchant.accountId)
      .where('livemode', '=', false)
      .execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.secret_ciphertext).not.toContain('whsec_');
      expect(row.secret_ciphertext.startsWith('v1.')).toBe(true);
    }
  });

  it('concurrent rotations leave exactly one current secret', async () => {
    const merchant = await testAccount(runtime);
    const results = await Promise.all(
      [1, 2, 3].map(() => call('POST', '/v1/webhook_secret/rotate', merchant.apiKey, { grace_period_minutes: 5 })),
    );
    for (const res of results) expect(res.statusCode).toBe(200);
    const current = await runtime.db
      .selectFrom('webhook_secrets')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .where('livemode', '=', false)
      .where('expires_at', 'is', null)
      .execute();
    expect(current).toHaveLength(1);
  });
});

describe('events API', () => {
  let merchant: TestAccount;
  const ids: string[] = [];

  beforeAll(async () => {
    merchant = await testAccount(runtime);
    for (const type of [
      'payment.paid',
      'payment.settled',
      'payment.paid',
      'payment.expired',
      'payment.paid',
    ] as const) {
      ids.push((await writeEvent(runtime, { accountId: merchant.accountId, type, webhookUrl: null })).id);
      runtime.clock.advance(1000);
    }
  });

  it('lists newest first with limit, starting_after and has_more', async () => {
    const first = (await call('GET', '/v1/events?limit=2', merchant.apiKey)).json();
    expect(first.object).toBe('list');
    expect(first.data.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3]]);
    expect(first.has_more).toBe(true);
    const second = (await call('GET', `/v1/events?limit=2&starting_after=${ids[3]}`, merchant.apiKey)).json();
    expect(second.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    expect(second.has_more).toBe(true);
    const last = (await call('GET', `/v1/events?limit=2&starting_after=${ids[1]}`, merchant.apiKey)).json();
    expect(last.data.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    expect(last.has_more).toBe(false);
    expect(first.data[0]).toMatchObject({
      object: 'event',
      type: 'payment.paid',
      livemode: false,
      data: { reference: 'order-1', metadata: { plan: 'pro' } },
      webhook_url: null,
      delivery: null,
    });
  });

  it('filters by type and object_id', async () => {
    const paid = (await call('GET', '/v1/events?type=payment.paid&limit=100', merchant.apiKey)).json();
    expect(paid.data.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[2], ids[0]]);
    const none = (await call('GET', '/v1/events?object_id=pay_other', merchant.apiKey)).json();
    expect(none.data).toEqual([]);
  });

  it('filters by creation time with created_gte and created_lte, as every list does', async () => {
    const all = (await call('GET', '/v1/events?limit=100', merchant.apiKey)).json();
    const created = new Map<string, string>(
      all.data.map((e: { id: string; created: string }) => [e.id, e.created] as const),
    );
    const query = `created_gte=${created.get(ids[1]!)}&created_lte=${created.get(ids[3]!)}`;
    const range = (await call('GET', `/v1/events?${query}&limit=100`, merchant.apiKey)).json();
    expect(range.data.map((e: { id: string }) => e.id)).toEqual([ids[3], ids[2], ids[1]]);
    const after = (await call('GET', `/v1/events?created_gte=${created.get(ids[4]!)}`, merchant.apiKey)).json();
    expect(after.data.map((e: { id: string }) => e.id)).toEqual([ids[4]]);
  });

  it('refuses bad query parameters, naming them', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['starting_after=evt_nope', 'starting_after'],
      ['colour=red', 'colour'],
      // An unknown type is a 400 like an unknown status on the other lists, not an empty page.
      ['type=payment.setled', 'type'],
      ['created_gte=yesterday', 'created_gte'],
    ]) {
      const res = await call('GET', `/v1/events?${query}`, merchant.apiKey);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.param, query).toBe(param);
    }
  });

  it("another account's event, or the other mode's, does not exist (404)", async () => {
    const stranger = await testAccount(runtime);
    const liveKey = await extraKey(runtime, merchant.accountId, { livemode: true, scopes: ['webhooks'] });
    for (const key of [stranger.apiKey, liveKey]) {
      for (const [method, url] of [
        ['GET', `/v1/events/${ids[0]}`],
        ['GET', `/v1/events/${ids[0]}/deliveries`],
        ['POST', `/v1/events/${ids[0]}/redeliver`],
      ] as const) {
        const res = await call(method, url, key);
        expect(res.statusCode, url).toBe(404);
        expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'id' });
      }
      const list = (await call('GET', '/v1/events', key)).json();
      expect(list.data.map((e: { id: string }) => e.id)).not.toContain(ids[0]);
      const cursor = await call('GET', `/v1/events?starting_after=${ids[0]}`, key);
      expect(cursor.statusCode).toBe(400);
    }
    expect((await call('GET', '/v1/events/evt_unknown', merchant.apiKey)).statusCode).toBe(404);
  });

  it('shows the delivery state and the attempts of a delivered event', async () => {
    const receiver = await startReceiver();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    const before = (await call('GET', `/v1/events/${event.id}`, merchant.apiKey)).json();
    expect(before.delivery).toMatchObject({ status: 'pending', attempts: 0, next_attempt_at: expect.any(String) });
    expect((await call('GET', `/v1/events/${event.id}/deliveries`, merchant.apiKey)).json().data).toEqual([]);
    expect(await deliver(merchant.accountId)).toBe(1);
    const after = (await call('GET', `/v1/events/${event.id}`, merchant.apiKey)).json();
    expect(after).toMatchObject({
      id: event.id,
      webhook_url: receiver.url,
      delivery: { status: 'delivered', attempts: 1, next_attempt_at: null, delivered_at: expect.any(String) },
    });
    const attempts = (await call('GET', `/v1/events/${event.id}/deliveries`, merchant.apiKey)).json();
    expect(attempts).toMatchObject({ object: 'list', has_more: false });
    expect(attempts.data).toEqual([
      {
        id: expect.stringMatching(/^del_/),
        object: 'webhook_attempt',
        event_id: event.id,
        attempt: 1,
        trigger: 'automatic',
        endpoint_id: null,
        url: receiver.url,
        status: 'succeeded',
        created: expect.any(String),
        finished_at: expect.any(String),
        finished: expect.any(String),
        response_status: 200,
        latency_ms: expect.any(Number),
        response_excerpt: 'ok',
        error: null,
      },
    ]);
  });

  it('documents the routes in /openapi.json', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [
      '/v1/webhook_secret',
      '/v1/webhook_secret/rotate',
      '/v1/events',
      '/v1/events/{id}',
      '/v1/events/{id}/deliveries',
      '/v1/events/{id}/redeliver',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
  });
});
