// Issue 14, notifications: account webhook endpoints. Their API and dashboard (CRUD, validation,
// the secret shown once and sealed at rest), and the acceptance: an endpoint receives a held
// payout's action.confirmation_required and, after another key approved it and the settlement
// worker settled it on the devnet, payout.settled, each verified with the standardwebhooks
// package under the endpoint's own secret. Endpoints not subscribed, disabled or deleted get
// nothing (new). The file runs on a settlement database of its own (test/support/settlement.ts).

import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { expireDueConfirmations } from '../src/policy/confirmations.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { runDeliveryBatch, startDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import { bearer, extraKey, type TestAccount, testAccount, testApp, testRuntime } from './support/harness.ts';
import { ADDRESS_A, editPolicy, fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from './support/webhooks.ts';

let chain: ChainConnection;
/** WEBHOOK_ALLOW_PRIVATE=1, so endpoints can point at receivers on 127.0.0.1. */
let runtime: Awaited<ReturnType<typeof settlementRuntime>>;
let app: FastifyInstance;
/** The production rule: private targets refused. */
let strictApp: FastifyInstance;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
  strictApp = await testApp(await testRuntime());
});

afterAll(async () => {
  for (const stop of stops) await stop();
  await chain?.close();
});

function call(method: 'GET' | 'POST' | 'DELETE', url: string, key: string, body?: unknown, on = app) {
  return on.inject({
    method,
    url,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

async function createEndpoint(
  key: string,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; url: string }> {
  const res = await call('POST', '/v1/webhook_endpoints', key, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

interface Delivered {
  id: string;
  type: string;
  data: { object: { id: string; status: string; input?: Record<string, unknown>; tx_hash?: string } };
}

/** What a receiver got, each body verified with standardwebhooks under `secret` (throws if not). */
function verified(receiver: TestReceiver, secret: string): Delivered[] {
  const webhook = new Webhook(secret);
  return receiver.received.map(
    (r: ReceivedRequest) => webhook.verify(r.body, r.headers as Record<string, string>) as never,
  );
}

/** Polls until no delivery of the account is pending: every target got what it will get. */
async function allDeliveriesSettled(accountId: string): Promise<void> {
  await waitUntil(
    'every delivery to finish',
    async () => {
      const row = await runtime.db
        .selectFrom('event_deliveries')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('account_id', '=', accountId)
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      return Number(row.n) === 0;
    },
    60_000,
  );
}

describe('the webhook endpoint API', () => {
  let merchant: TestAccount;

  beforeAll(async () => {
    merchant = await testAccount(runtime);
  });

  it('creates an endpoint and shows its secret once; reads, lists, updates and deletes it', async () => {
    const res = await call('POST', '/v1/webhook_endpoints', merchant.apiKey, {
      url: 'https://finance.example/hooks',
      enabled_events: ['payout.settled', 'action.confirmation_required', 'payout.settled'],
      description: 'finance',
    });
    expect(res.statusCode, res.body).toBe(200);
    const created = res.json();
    expect(created).toMatchObject({
      id: expect.stringMatching(/^we_/),
      object: 'webhook_endpoint',
      url: 'https://finance.example/hooks',
      enabled_events: ['payout.settled', 'action.confirmation_required'],
      description: 'finance',
      status: 'enabled',
      livemode: false,
      secret: expect.stringMatching(/^whsec_/),
    });

    // Sealed at rest, never shown again.
    const stored = await runtime.db
      .selectFrom('webhook_endpoints')
      .select('secret_ciphertext')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(stored.secret_ciphertext).not.toContain(created.secret.slice('whsec_'.length));
    expect(runtime.secretBox.open(stored.secret_ciphertext)).toBe(created.secret);
    const read = await call('GET', `/v1/webhook_endpoints/${created.id}`, merchant.apiKey);
    expect(read.statusCode).toBe(200);
    expect(read.json()).not.toHaveProperty('secret');
    expect(read.body).not.toContain(created.secret);

    const updated = await call('POST', `/v1/webhook_endpoints/${created.id}`, merchant.apiKey, {
      url: 'https://finance.example/v2',
      enabled_events: ['*'],
      description: null,
      disabled: true,
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json()).toMatchObject({
      url: 'https://finance.example/v2',
      enabled_events: ['*'],
      description: null,
      status: 'disabled',
    });

    const deleted = await call('DELETE', `/v1/webhook_endpoints/${created.id}`, merchant.apiKey);
    expect(deleted.json()).toEqual({ id: created.id, object: 'webhook_endpoint', deleted: true });
    expect((await call('GET', `/v1/webhook_endpoints/${created.id}`, merchant.apiKey)).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/webhook_endpoints/${created.id}`, merchant.apiKey)).statusCode).toBe(404);
    const list = (await call('GET', '/v1/webhook_endpoints', merchant.apiKey)).json();
    expect(list.data.map((e: { id: string }) => e.id)).not.toContain(created.id);
  });

  it('lists newest first, paged with limit and starting_after', async () => {
    const owner = await testAccount(runtime);
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push((await createEndpoint(owner.apiKey, { url: `https://h${n}.example/`, enabled_events: ['*'] })).id);
      runtime.clock.advance(1000);
    }
    const first = (await call('GET', '/v1/webhook_endpoints?limit=2', owner.apiKey)).json();
    expect(first).toMatchObject({ object: 'list', has_more: true });
    expect(first.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    const next = (await call('GET', `/v1/webhook_endpoints?limit=2&starting_after=${ids[1]}`, owner.apiKey)).json();
    expect(next.data.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    expect(next.has_more).toBe(false);
    for (const e of first.data) expect(e).not.toHaveProperty('secret');
  });

  it('another account, the other mode and a key without the webhooks scope see nothing', async () => {
    const endpoint = await createEndpoint(merchant.apiKey, { url: 'https://h.example/', enabled_events: ['*'] });
    const other = await testAccount(runtime);
    const live = await extraKey(runtime, merchant.accountId, { livemode: true });
    for (const key of [other.apiKey, live]) {
      expect((await call('GET', `/v1/webhook_endpoints/${endpoint.id}`, key)).statusCode).toBe(404);
      expect((await call('DELETE', `/v1/webhook_endpoints/${endpoint.id}`, key)).statusCode).toBe(404);
      const list = (await call('GET', '/v1/webhook_endpoints', key)).json();
      expect(list.data.map((e: { id: string }) => e.id)).not.toContain(endpoint.id);
    }
    const narrow = await extraKey(runtime, merchant.accountId, { scopes: ['payments:read'] });
    expect((await call('GET', '/v1/webhook_endpoints', narrow)).statusCode).toBe(403);
  });

  it('refuses an SSRF target naming url, as payment webhook_url is refused', async () => {
    for (const url of ['http://127.0.0.1:4242/hooks', 'http://10.0.0.7/', 'http://localhost/x', 'ftp://h.example/']) {
      const res = await call(
        'POST',
        '/v1/webhook_endpoints',
        merchant.apiKey,
        { url, enabled_events: ['*'] },
        strictApp,
      );
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error).toMatchObject({ param: 'url', message: expect.stringMatching(/^url /) });
    }
    // The metadata service stays refused even where private addresses are allowed, and on update.
    const refused = await call('POST', '/v1/webhook_endpoints', merchant.apiKey, {
      url: 'http://169.254.169.254/latest',
      enabled_events: ['*'],
    });
    expect(refused.json().error).toMatchObject({ param: 'url' });
    const endpoint = await createEndpoint(merchant.apiKey, { url: 'https://h.example/', enabled_events: ['*'] });
    const update = await call('POST', `/v1/webhook_endpoints/${endpoint.id}`, merchant.apiKey, {
      url: 'http://169.254.169.254/',
    });
    expect(update.statusCode).toBe(400);
    expect(update.json().error.param).toBe('url');
  });

  it('refuses unknown event types, an empty list and "*" mixed with types', async () => {
    const cases: Array<[unknown, string]> = [
      [['payout.settled', 'payout.exploded'], 'enabled_events[1]'],
      [[], 'enabled_events'],
      [['*', 'payout.settled'], 'enabled_events'],
    ];
    for (const [events, param] of cases) {
      const res = await call('POST', '/v1/webhook_endpoints', merchant.apiKey, {
        url: 'https://h.example/',
        enabled_events: events,
      });
      expect(res.statusCode, JSON.stringify(events)).toBe(400);
      expect(res.json().error.param).toBe(param);
    }
    const unknown = await call('POST', '/v1/webhook_endpoints', merchant.apiKey, {
      url: 'https://h.example/',
      enabled_events: ['payout.exploded'],
    });
    expect(unknown.json().error.message).toContain("unknown event type 'payout.exploded'");
    const missing = await call('POST', '/v1/webhook_endpoints', merchant.apiKey, { url: 'https://h.example/' });
    expect(missing.json().error.param).toBe('enabled_events');
  });
});

describe('an account endpoint receives what it subscribed to, signed with its own secret', () => {
  let merchant: TestAccount;
  let approver: string;

  beforeAll(async () => {
    merchant = await testAccount(runtime);
    approver = await extraKey(runtime, merchant.accountId, { scopes: ['approvals'] });
    await fund(app, merchant.apiKey, 1000);
    const put = await editPolicy(app, merchant.apiKey, (policy) => {
      policy.channels.api.confirm_above = '10';
    });
    expect(put.statusCode, put.body).toBe(200);
    const settlement = startSettlementWorker(runtime, { pollIntervalMs: 20 });
    stops.push(() => settlement.stop());
    stops.push(startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [merchant.accountId] }));
  });

  it('action.confirmation_required, then payout.settled after another key approved it; nothing else', async () => {
    const finance = await startReceiver();
    const failures = await startReceiver();
    const laterDisabled = await startReceiver();
    const laterDeleted = await startReceiver();
    const subscribed = await createEndpoint(merchant.apiKey, {
      url: finance.url,
      enabled_events: ['action.confirmation_required', 'payout.settled'],
    });
    await createEndpoint(merchant.apiKey, {
      url: failures.url,
      enabled_events: ['payout.failed', 'refund.failed'],
    });
    const disabled = await createEndpoint(merchant.apiKey, { url: laterDisabled.url, enabled_events: ['*'] });
    const deleted = await createEndpoint(merchant.apiKey, { url: laterDeleted.url, enabled_events: ['*'] });

    const to = payoutAddresses(1)[0]!;
    const held = await post(app, merchant.apiKey, '/v1/payouts', { amount: 11, to_address: to, reference: 'inv-7' });
    expect(held.statusCode, held.body).toBe(202);
    const confirmationId = held.json().confirmation_id as string;

    await finance.waitFor(1, 60_000);
    const [required] = verified(finance, subscribed.secret);
    expect(required).toMatchObject({
      type: 'action.confirmation_required',
      data: { object: { id: confirmationId, object: 'confirmation', status: 'pending', tool: 'create_payout' } },
    });
    expect(required!.data.object.input).toMatchObject({ amount: 11, to_address: to });
    // The endpoints subscribed to '*' got it too, each under its own secret only.
    await laterDisabled.waitFor(1, 60_000);
    await laterDeleted.waitFor(1, 60_000);
    expect(verified(laterDisabled, disabled.secret).map((e) => e.type)).toEqual(['action.confirmation_required']);
    expect(() => verified(laterDisabled, subscribed.secret)).toThrow();

    const disable = await call('POST', `/v1/webhook_endpoints/${disabled.id}`, merchant.apiKey, { disabled: true });
    expect(disable.json().status).toBe('disabled');
    expect((await call('DELETE', `/v1/webhook_endpoints/${deleted.id}`, merchant.apiKey)).statusCode).toBe(200);

    const approved = await call('POST', `/v1/confirmations/${confirmationId}/approve`, approver);
    expect(approved.statusCode, approved.body).toBe(200);
    const payoutId = approved.json().result.id as string;

    await finance.waitFor(2, 60_000);
    const [, settled] = verified(finance, subscribed.secret);
    expect(settled).toMatchObject({
      type: 'payout.settled',
      data: { object: { id: payoutId, status: 'settled', reference: 'inv-7' } },
    });
    expect(settled!.data.object.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);

    await allDeliveriesSettled(merchant.accountId);
    expect(verified(finance, subscribed.secret).map((e) => e.type)).toEqual([
      'action.confirmation_required',
      'payout.settled',
    ]);
    expect(failures.received).toEqual([]);
    expect(laterDisabled.received).toHaveLength(1);
    expect(laterDeleted.received).toHaveLength(1);

    // action.approved was written (no endpoint here wanted it), with the approver and the result.
    const approvedEvents = (await call('GET', `/v1/events?type=action.approved`, merchant.apiKey)).json().data;
    expect(approvedEvents).toHaveLength(1);
    expect(approvedEvents[0]).toMatchObject({
      object_id: confirmationId,
      data: { object: { id: confirmationId, status: 'executed', result: { id: payoutId } } },
      delivery: null,
      endpoint_deliveries: [],
    });
    // The events API shows each endpoint's delivery of an event, and whose each attempt was.
    const settledEvent = (
      await call('GET', `/v1/events?type=payout.settled&object_id=${payoutId}`, merchant.apiKey)
    ).json().data[0];
    expect(settledEvent.endpoint_deliveries).toEqual([
      expect.objectContaining({ endpoint_id: subscribed.id, status: 'delivered', attempts: 1 }),
    ]);
    const attempts = (await call('GET', `/v1/events/${settledEvent.id}/deliveries`, merchant.apiKey)).json().data;
    expect(attempts).toEqual([
      expect.objectContaining({ endpoint_id: subscribed.id, url: finance.url, status: 'succeeded' }),
    ]);
    expect(finance.received[1]!.headers['webhook-id']).toBe(settledEvent.id);
  });

  it("a payment's webhook_url and an endpoint each get payment.settled once, under their own secret; a retry stays with its target", async () => {
    // A merchant of its own, delivered by a worker of its own; the describe's settlement worker settles.
    const shop = await testAccount(runtime);
    stops.push(startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [shop.accountId] }));
    const payments = await startReceiver();
    let failNextSettled = false;
    const endpointReceiver = await startReceiver((request, res) => {
      if (failNextSettled && request.body.includes('"payment.settled"')) {
        failNextSettled = false;
        res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
      } else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    const endpoint = await createEndpoint(shop.apiKey, {
      url: endpointReceiver.url,
      enabled_events: ['payment.settled'],
    });

    const payment = await createPayment(app, shop.apiKey, { reference: 'both-targets', webhook_url: payments.url });
    const paid = await payPayment(app, shop.apiKey, payment.id);
    expect(paid.statusCode, paid.body).toBe(200);

    const settledIn = (receiver: TestReceiver) =>
      receiver.received.filter((r) => {
        const body = JSON.parse(r.body) as Delivered;
        return body.type === 'payment.settled' && body.data.object.id === payment.id;
      });
    await waitUntil(
      'payment.settled at both receivers',
      async () => {
        return settledIn(payments).length >= 1 && settledIn(endpointReceiver).length >= 1;
      },
      60_000,
    );
    await allDeliveriesSettled(shop.accountId);

    // Exactly one each, the same event, each verifying under its own secret and not the other's.
    const [toUrl] = settledIn(payments);
    const [toEndpoint] = settledIn(endpointReceiver);
    expect(settledIn(payments)).toHaveLength(1);
    expect(settledIn(endpointReceiver)).toHaveLength(1);
    expect(endpointReceiver.received).toHaveLength(1);
    const verify = (request: ReceivedRequest, secret: string) =>
      new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as Delivered;
    const viaUrl = verify(toUrl!, shop.webhookSecret);
    const viaEndpoint = verify(toEndpoint!, endpoint.secret);
    expect(() => verify(toUrl!, endpoint.secret)).toThrow();
    expect(() => verify(toEndpoint!, shop.webhookSecret)).toThrow();
    expect(viaUrl).toMatchObject({ type: 'payment.settled', data: { object: { id: payment.id, status: 'settled' } } });
    expect(viaEndpoint.id).toBe(viaUrl.id);
    expect(toUrl!.headers['webhook-id']).toBe(viaUrl.id);
    expect(toEndpoint!.headers['webhook-id']).toBe(viaUrl.id);

    const eventId = viaUrl.id;
    const event = (await call('GET', `/v1/events/${eventId}`, shop.apiKey)).json();
    expect(event).toMatchObject({
      id: eventId,
      type: 'payment.settled',
      object_id: payment.id,
      webhook_url: payments.url,
      delivery: { status: 'delivered', attempts: 1 },
      endpoint_deliveries: [{ endpoint_id: endpoint.id, status: 'delivered', attempts: 1 }],
    });
    const attempts = (await call('GET', `/v1/events/${eventId}/deliveries`, shop.apiKey)).json().data;
    expect(attempts).toHaveLength(2);
    expect(attempts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ endpoint_id: null, url: payments.url, attempt: 1, status: 'succeeded' }),
        expect.objectContaining({
          endpoint_id: endpoint.id,
          url: endpointReceiver.url,
          attempt: 1,
          status: 'succeeded',
        }),
      ]),
    );

    // A redelivery the endpoint answers with 500: its retry goes to the endpoint only.
    failNextSettled = true;
    const redeliver = await call('POST', `/v1/events/${eventId}/redeliver`, shop.apiKey);
    expect(redeliver.statusCode, redeliver.body).toBe(200);
    await endpointReceiver.waitFor(2, 60_000);
    await waitUntil('the redelivery at the webhook_url', async () => settledIn(payments).length >= 2, 60_000);
    // The retry is due about 5 s later; move the clock past it instead of waiting.
    runtime.clock.advance(10_000);
    await endpointReceiver.waitFor(3, 60_000);
    await allDeliveriesSettled(shop.accountId);

    expect(endpointReceiver.received.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId, eventId]);
    expect(settledIn(endpointReceiver)).toHaveLength(3);
    expect(settledIn(payments)).toHaveLength(2);
    for (const request of endpointReceiver.received) verify(request, endpoint.secret);
    for (const request of settledIn(payments)) verify(request, shop.webhookSecret);

    const after = (await call('GET', `/v1/events/${eventId}`, shop.apiKey)).json();
    expect(after).toMatchObject({
      delivery: { status: 'delivered', attempts: 2 },
      endpoint_deliveries: [{ endpoint_id: endpoint.id, status: 'delivered', attempts: 3 }],
    });
    const all = (await call('GET', `/v1/events/${eventId}/deliveries`, shop.apiKey)).json().data as Array<{
      endpoint_id: string | null;
      attempt: number;
      trigger: string;
      status: string;
      response_status: number | null;
    }>;
    const summary = (endpointId: string | null) =>
      all
        .filter((a) => a.endpoint_id === endpointId)
        .map((a) => [a.attempt, a.status, a.response_status])
        .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(summary(null)).toEqual([
      [1, 'succeeded', 200],
      [2, 'succeeded', 200],
    ]);
    expect(summary(endpoint.id)).toEqual([
      [1, 'succeeded', 200],
      [2, 'failed', 500],
      [3, 'succeeded', 200],
    ]);
    expect(all.filter((a) => a.attempt === 2).map((a) => a.trigger)).toEqual(['redelivery', 'redelivery']);
  }, 180_000);
});

describe('rejected and expired held actions are announced', () => {
  it('action.rejected and action.expired reach an endpoint subscribed to them, with the confirmation', async () => {
    // Delivered by stepping the worker: this account is not in the running worker's accountIds.
    const merchant = await testAccount(runtime);
    const approver = await extraKey(runtime, merchant.accountId, { scopes: ['approvals'] });
    await fund(app, merchant.apiKey, 100);
    await editPolicy(app, merchant.apiKey, (policy) => {
      policy.channels.api.confirm_above = '10';
    });
    const receiver = await startReceiver();
    const endpoint = await createEndpoint(merchant.apiKey, {
      url: receiver.url,
      enabled_events: ['action.rejected', 'action.expired'],
    });
    const hold = async (): Promise<string> => {
      const res = await post(app, merchant.apiKey, '/v1/payouts', { amount: 12, to_address: ADDRESS_A });
      expect(res.statusCode, res.body).toBe(202);
      return res.json().confirmation_id;
    };
    const rejectedId = await hold();
    const lapsingId = await hold();
    expect((await call('POST', `/v1/confirmations/${rejectedId}/reject`, approver)).statusCode).toBe(200);

    // Lapsed: its deadline moved into the past (advancing the clock would also move the deliveries'
    // signed timestamps out of the receiver's 5-minute window).
    await runtime.db
      .updateTable('confirmations')
      .set({ expires_at: new Date(runtime.clock.now().getTime() - 1000) })
      .where('id', '=', lapsingId)
      .execute();
    expect(await expireDueConfirmations(runtime.db, runtime.config, runtime.clock.now())).toBe(1);
    expect((await call('GET', `/v1/confirmations/${lapsingId}`, merchant.apiKey)).json().status).toBe('expired');

    await waitUntil('both events delivered', async () => {
      await runDeliveryBatch(runtime, { accountIds: [merchant.accountId] });
      return receiver.received.length >= 2;
    });
    const events = verified(receiver, endpoint.secret);
    expect(events.map((e) => [e.type, e.data.object.id, e.data.object.status])).toEqual([
      ['action.rejected', rejectedId, 'rejected'],
      ['action.expired', lapsingId, 'expired'],
    ]);
  });
});

describe('the dashboard section', () => {
  const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

  async function signIn(key: string): Promise<string> {
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
      payload: new URLSearchParams({ api_key: key }).toString(),
    });
    expect(res.statusCode, res.body).toBe(303);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).join('\n');
    return `plainpay_session=${/plainpay_session=([^;]+)/.exec(cookie)![1]}`;
  }

  async function submit(cookie: string, url: string, fields: Array<[string, string]>): Promise<LightMyRequestResponse> {
    const page = await app.inject({ method: 'GET', url: '/dashboard/webhooks', headers: { cookie } });
    const token = /name="csrf_token" value="([^"]+)"/.exec(page.body)![1]!;
    return app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
      payload: new URLSearchParams([['csrf_token', token], ...fields]).toString(),
    });
  }

  it('adds an endpoint with its event types (secret shown once), refuses bad input, and deletes it', async () => {
    const merchant = await testAccount(runtime);
    const cookie = await signIn(merchant.apiKey);

    const added = await submit(cookie, '/dashboard/webhooks/endpoints', [
      ['url', 'https://finance.example/plainpay'],
      ['description', 'approvals'],
      ['enabled_events', 'action.confirmation_required'],
      ['enabled_events', 'payout.failed'],
    ]);
    expect(added.statusCode, added.body).toBe(201);
    const secret = /id="new-endpoint-secret">(whsec_[^<]+)</.exec(added.body)![1]!;
    const id = /id="new-endpoint-id">(we_[^<]+)</.exec(added.body)![1]!;
    const api = (await call('GET', `/v1/webhook_endpoints/${id}`, merchant.apiKey)).json();
    expect(api).toMatchObject({
      url: 'https://finance.example/plainpay',
      enabled_events: ['action.confirmation_required', 'payout.failed'],
      description: 'approvals',
    });

    const page = await app.inject({ method: 'GET', url: '/dashboard/webhooks', headers: { cookie } });
    expect(page.body).toContain(`data-endpoint-id="${id}"`);
    expect(page.body).not.toContain(secret);

    const unknown = await submit(cookie, '/dashboard/webhooks/endpoints', [
      ['url', 'https://finance.example/x'],
      ['enabled_events', 'payout.exploded'],
    ]);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain('unknown event type');
    const none = await submit(cookie, '/dashboard/webhooks/endpoints', [['url', 'https://finance.example/x']]);
    expect(none.statusCode).toBe(400);
    const metadata = await submit(cookie, '/dashboard/webhooks/endpoints', [
      ['url', 'http://169.254.169.254/'],
      ['enabled_events', '*'],
    ]);
    expect(metadata.statusCode).toBe(400);

    // Without the form's token the change is refused.
    const forged = await app.inject({
      method: 'POST',
      url: `/dashboard/webhooks/endpoints/${id}/delete`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...SAME_ORIGIN },
      payload: '',
    });
    expect(forged.statusCode).toBe(403);

    const disabled = await submit(cookie, `/dashboard/webhooks/endpoints/${id}/disable`, []);
    expect(disabled.statusCode).toBe(303);
    expect((await call('GET', `/v1/webhook_endpoints/${id}`, merchant.apiKey)).json().status).toBe('disabled');
    const deleted = await submit(cookie, `/dashboard/webhooks/endpoints/${id}/delete`, []);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toContain('done=endpoint-deleted');
    expect((await call('GET', `/v1/webhook_endpoints/${id}`, merchant.apiKey)).statusCode).toBe(404);
  });
});
