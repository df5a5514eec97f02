import type { FastifyInstance } from 'fastify';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { claimDueDeliveries } from '../src/db/repositories/webhook-deliveries.ts';
import { RESPONSE_EXCERPT_BYTES } from '../src/webhooks/deliver.ts';
import {
  type DeliveryWorkerOptions,
  RETRY_SCHEDULE_MS,
  runDeliveryBatch,
  startDeliveryWorker,
} from '../src/webhooks/delivery-worker.ts';
import { verifyWebhook } from '../src/webhooks/signer.ts';
import { bearer, type TestAccount, type TestRuntime, testAccount, testApp, testRuntime } from './support/harness.ts';
import { eventually, startReceiver, writeEvent } from './support/webhooks.ts';
import { settlesBeforeHang } from './support/hang.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  runtime = await testRuntime({ WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
});

// A fresh account per test: events left pending by one test never become due in another.
// Tests that move the clock come after those that verify against the receiver's real clock.
beforeEach(async () => {
  merchant = await testAccount(runtime);
});

afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

/** A worker scoped to the merchant of these tests: other tests in the file have accounts of their own. */
function worker(options: DeliveryWorkerOptions = {}): void {
  stops.push(
    startDeliveryWorker(runtime, {
      pollIntervalMs: 20,
      accountIds: [merchant.accountId],
      random: () => 0.5,
      ...options,
    }),
  );
}

function batch(options: DeliveryWorkerOptions = {}): Promise<number> {
  return runDeliveryBatch(runtime, { accountIds: [merchant.accountId], random: () => 0.5, ...options });
}

async function get(url: string) {
  const res = await app.inject({ method: 'GET', url, headers: bearer(merchant.apiKey) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function deliveryRow(eventId: string) {
  return runtime.db
    .selectFrom('event_deliveries')
    .selectAll()
    .where('event_id', '=', eventId)
    .executeTakeFirstOrThrow();
}

describe('delivery', () => {
  it('POSTs the signed envelope: Standard Webhooks headers, the body signed as sent, verifiable with standardwebhooks', async () => {
    const receiver = await startReceiver();
    const event = await writeEvent(runtime, {
      accountId: merchant.accountId,
      type: 'payment.settled',
      data: { reference: 'order-77', metadata: { plan: 'pro', seats: 3, note: 'Àdùkẹ́ ₦' } },
      webhookUrl: receiver.url,
    });
    worker();
    const [request] = await receiver.waitFor(1);
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hooks');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toBe(event.id);
    expect(request!.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    const verified = new StandardWebhook(merchant.webhookSecret).verify(request!.body, request!.headers as never);
    expect(verified).toEqual({
      id: event.id,
      type: 'payment.settled',
      created: event.created_at.toISOString(),
      livemode: false,
      data: { reference: 'order-77', metadata: { plan: 'pro', seats: 3, note: 'Àdùkẹ́ ₦' } },
    });
    // Exactly the envelope's keys, in this order: the body is serialised once and signed as sent.
    expect(Object.keys(JSON.parse(request!.body))).toEqual(['id', 'type', 'created', 'livemode', 'data']);

    const state = await eventually(async () => {
      const row = await deliveryRow(event.id);
      return row.status === 'delivered' ? row : undefined;
    });
    expect(state).toMatchObject({ attempt_count: 1, leased_attempt_id: null });
    expect(receiver.received).toHaveLength(1);
  });

  it('the receiver answers 500 three times then 200: four arrivals with one webhook-id, all listed by the deliveries API', async () => {
    const receiver = await startReceiver((_req, res, index) => {
      if (index < 3) res.writeHead(500, { 'content-type': 'text/plain' }).end(`boom ${index + 1}`);
      else res.writeHead(200).end('thanks');
    });
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    // Short real-time waits stand in for 5 s, 5 min, 30 min so the receiver verifies at its own clock.
    worker({ schedule: [30, 30, 30, 30] });
    const arrivals = await receiver.waitFor(4);
    await eventually(async () => ((await deliveryRow(event.id)).status === 'delivered' ? true : undefined));

    expect(new Set(arrivals.map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));
    expect(new Set(arrivals.map((r) => JSON.parse(r.body).id))).toEqual(new Set([event.id]));
    // Same bytes every time: receivers may hash the body.
    expect(new Set(arrivals.map((r) => r.body)).size).toBe(1);
    for (const arrival of arrivals) {
      expect(() =>
        new StandardWebhook(merchant.webhookSecret).verify(arrival.body, arrival.headers as never),
      ).not.toThrow();
    }

    const attempts = await get(`/v1/events/${event.id}/deliveries`);
    expect(
      attempts.data.map((a: { attempt: number; status: string; response_status: number }) => [
        a.attempt,
        a.status,
        a.response_status,
      ]),
    ).toEqual([
      [1, 'failed', 500],
      [2, 'failed', 500],
      [3, 'failed', 500],
      [4, 'succeeded', 200],
    ]);
    expect(attempts.data[0]).toMatchObject({
      object: 'webhook_attempt',
      event_id: event.id,
      trigger: 'automatic',
      url: receiver.url,
      response_excerpt: 'boom 1',
      error: { code: 'http_status', message: 'the receiver answered 500' },
    });
    expect(attempts.data[3]).toMatchObject({ response_excerpt: 'thanks', error: null });
    for (const a of attempts.data) expect(a.latency_ms).toBeGreaterThanOrEqual(0);

    const view = await get(`/v1/events/${event.id}`);
    expect(view.delivery).toMatchObject({ status: 'delivered', attempts: 4, next_attempt_at: null });
    expect(receiver.received).toHaveLength(4);
  });

  it('records a response excerpt of at most 1 KB, and a 3xx is a failure whose target is never contacted', async () => {
    const target = await startReceiver();
    const receiver = await startReceiver((_req, res, index) => {
      if (index === 0) res.writeHead(500).end('x'.repeat(10_000));
      else res.writeHead(302, { location: `${target.url}/steal` }).end();
    });
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await batch()).toBe(1);
    await runtime.db
      .updateTable('event_deliveries')
      .set({ next_attempt_at: runtime.clock.now() })
      .where('event_id', '=', event.id)
      .execute();
    expect(await batch()).toBe(1);
    const attempts = (await get(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempts[0].response_excerpt).toHaveLength(RESPONSE_EXCERPT_BYTES);
    expect(attempts[1]).toMatchObject({ status: 'failed', response_status: 302, error: { code: 'redirect' } });
    expect(attempts[1].error.message).toContain('not followed');
    expect(target.received).toHaveLength(0);
    expect((await deliveryRow(event.id)).status).toBe('pending');
  });

  it('a receiver that does not answer in time is a timeout failure', async () => {
    const receiver = await startReceiver(() => {
      // Never answers.
    });
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    // The silent receiver must not hold the batch: the delivery gives up after timeoutMs.
    expect(await settlesBeforeHang(batch({ timeoutMs: 300 }))).toEqual({ settled: true, value: 1 });
    const [attempt] = (await get(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempt).toMatchObject({ status: 'failed', response_status: null, error: { code: 'timeout' } });
  });

  it('a refused connection is a network failure', async () => {
    const receiver = await startReceiver();
    await receiver.close();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await batch()).toBe(1);
    const [attempt] = (await get(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempt).toMatchObject({ status: 'failed', error: { code: 'network' } });
    expect(attempt.error.message).toContain('ECONNREFUSED');
  });

  it('an event without webhook_url is recorded only: no delivery, nothing to redeliver', async () => {
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: null });
    const row = await runtime.db
      .selectFrom('event_deliveries')
      .select('event_id')
      .where('event_id', '=', event.id)
      .executeTakeFirst();
    expect(row).toBeUndefined();
    expect((await get(`/v1/events/${event.id}`)).delivery).toBeNull();
    const res = await app.inject({
      method: 'POST',
      url: `/v1/events/${event.id}/redeliver`,
      headers: bearer(merchant.apiKey),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toContain('no webhook_url');
  });

  it('our own verifier agrees, and a re-serialised body would not verify', async () => {
    const receiver = await startReceiver();
    await writeEvent(runtime, {
      accountId: merchant.accountId,
      data: { reference: 'r', metadata: { b: 1, a: [1.5, 'x'] } },
      webhookUrl: receiver.url,
    });
    expect(await batch()).toBe(1);
    const [request] = receiver.received;
    const headers = request!.headers as Record<string, string>;
    expect(verifyWebhook({ body: request!.body, headers, secrets: [merchant.webhookSecret] }).ok).toBe(true);
    const pretty = JSON.stringify(JSON.parse(request!.body), null, 2);
    expect(verifyWebhook({ body: pretty, headers, secrets: [merchant.webhookSecret] }).ok).toBe(false);
  });
});

describe('retry schedule', () => {
  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 20 h between attempts, then fails (about 3 days)', async () => {
    // Its own account: this test moves the clock by days, which would make the retries of the
    // other tests' failed events due too.
    const own = await testAccount(runtime);
    const ownBatch = (options: DeliveryWorkerOptions = {}) => batch({ accountIds: [own.accountId], ...options });
    const ownGet = async (url: string) => {
      const res = await app.inject({ method: 'GET', url, headers: bearer(own.apiKey) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    const receiver = await startReceiver((_req, res) => res.writeHead(503).end('down'));
    // Frozen: the checks below are to the millisecond, and real time passes under load.
    const resume = runtime.clock.freeze();
    onTestFinished(resume);
    const event = await writeEvent(runtime, { accountId: own.accountId, webhookUrl: receiver.url });
    const firstAt = runtime.clock.now().getTime();
    const waits: number[] = [];
    for (let i = 0; i < RETRY_SCHEDULE_MS.length + 1; i++) {
      expect(await ownBatch({ random: () => 0.5 })).toBe(1);
      const row = await deliveryRow(event.id);
      if (row.status === 'failed') break;
      const wait = row.next_attempt_at.getTime() - runtime.clock.now().getTime();
      waits.push(wait);
      // Not due a millisecond before its time.
      runtime.clock.advance(wait - 1);
      expect(await ownBatch()).toBe(0);
      runtime.clock.advance(1);
    }
    // random() = 0.5 puts the ±10 % jitter at 0, so the waits are the schedule itself (± the batch's own ms).
    expect(waits).toHaveLength(RETRY_SCHEDULE_MS.length);
    for (const [i, wait] of waits.entries()) expect(Math.abs(wait - RETRY_SCHEDULE_MS[i]!)).toBeLessThan(1000);
    const row = await deliveryRow(event.id);
    expect(row).toMatchObject({ status: 'failed', attempt_count: 10, round_attempts: 10 });
    const days = (row.failed_at!.getTime() - firstAt) / 86_400_000;
    expect(days).toBeGreaterThan(2.9);
    expect(days).toBeLessThan(3.1);
    expect(receiver.received).toHaveLength(10);
    expect((await ownGet(`/v1/events/${event.id}`)).delivery).toMatchObject({ status: 'failed', attempts: 10 });

    // Redeliver starts a new round at once, with the same event id.
    const res = await app.inject({
      method: 'POST',
      url: `/v1/events/${event.id}/redeliver`,
      headers: bearer(own.apiKey),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().delivery).toMatchObject({ status: 'pending', attempts: 10, failed_at: null });
    expect(await ownBatch()).toBe(1);
    const attempts = (await ownGet(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempts).toHaveLength(11);
    expect(attempts[10]).toMatchObject({ attempt: 11, trigger: 'redelivery', status: 'failed' });
    expect((await deliveryRow(event.id)).round_attempts).toBe(1);
    expect(receiver.received[10]!.headers['webhook-id']).toBe(event.id);
  });

  it("honours the receiver's Retry-After when it asks for longer than the schedule", async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(429, { 'retry-after': '120' }).end());
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await batch()).toBe(1);
    const wait = (await deliveryRow(event.id)).next_attempt_at.getTime() - runtime.clock.now().getTime();
    expect(wait).toBeGreaterThan(119_000);
    expect(wait).toBeLessThanOrEqual(120_000);
  });

  it('a delivered event can be redelivered with the same id', async () => {
    const receiver = await startReceiver();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    expect(await batch()).toBe(1);
    expect((await deliveryRow(event.id)).status).toBe('delivered');
    const res = await app.inject({
      method: 'POST',
      url: `/v1/events/${event.id}/redeliver`,
      headers: bearer(merchant.apiKey),
    });
    expect(res.json()).toMatchObject({ id: event.id, delivery: { status: 'pending' } });
    expect(await batch()).toBe(1);
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([event.id, event.id]);
    expect((await deliveryRow(event.id)).status).toBe('delivered');
  });
});

describe('leases and crashes', () => {
  it('an attempt cut short (worker died after claiming) is retried once the lease expires, and shows as interrupted', async () => {
    const receiver = await startReceiver();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    // A worker claims and "dies": the claim committed, nothing was recorded.
    const claimed = await runtime.db.transaction().execute((trx) =>
      claimDueDeliveries(trx, {
        now: runtime.clock.now(),
        limit: 10,
        leaseMs: 20_000,
        maxAttempts: 10,
        accountIds: [merchant.accountId],
      }),
    );
    expect(claimed.claimed.map((c) => c.eventId)).toEqual([event.id]);
    let attempts = (await get(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempts[0]).toMatchObject({ attempt: 1, status: 'in_progress' });

    // While leased, no other worker takes it.
    expect(await batch()).toBe(0);
    runtime.clock.advance(20_000);
    expect(await batch()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    attempts = (await get(`/v1/events/${event.id}/deliveries`)).data;
    expect(attempts.map((a: { status: string }) => a.status)).toEqual(['interrupted', 'succeeded']);
    expect((await deliveryRow(event.id)).status).toBe('delivered');
  });

  it('the result of an attempt whose lease was taken over does not clobber the newer attempt', async () => {
    const { recordAttemptResult } = await import('../src/db/repositories/webhook-deliveries.ts');
    const receiver = await startReceiver();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    const claimOnce = () =>
      runtime.db.transaction().execute((trx) =>
        claimDueDeliveries(trx, {
          now: runtime.clock.now(),
          limit: 10,
          leaseMs: 1000,
          maxAttempts: 10,
          accountIds: [merchant.accountId],
        }),
      );
    const slow = (await claimOnce()).claimed[0]!;
    runtime.clock.advance(1000);
    const fresh = (await claimOnce()).claimed[0]!;
    expect(fresh.attemptNumber).toBe(2);
    const finishedAt = runtime.clock.now();
    // The slow one fails late: it must not reschedule what the fresh attempt holds.
    await recordAttemptResult(runtime.db, {
      attemptId: slow.attemptId,
      deliveryId: slow.deliveryId,
      finishedAt,
      outcome: 'failed',
      responseStatus: 500,
      latencyMs: 1,
      responseExcerpt: null,
      errorCode: 'http_status',
      errorMessage: 'x',
      retryAt: new Date(finishedAt.getTime() + 3_600_000),
    });
    expect((await deliveryRow(event.id)).leased_attempt_id).toBe(fresh.attemptId);
    await recordAttemptResult(runtime.db, {
      attemptId: fresh.attemptId,
      deliveryId: fresh.deliveryId,
      finishedAt,
      outcome: 'succeeded',
      responseStatus: 200,
      latencyMs: 1,
      responseExcerpt: null,
      errorCode: null,
      errorMessage: null,
      retryAt: null,
    });
    expect((await deliveryRow(event.id)).status).toBe('delivered');
  });

  it('two workers share the outbox without sending any event twice', async () => {
    const receiver = await startReceiver((_req, res) => setTimeout(() => res.writeHead(204).end(), 5));
    const events = [];
    for (let i = 0; i < 40; i++) {
      events.push(await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url }));
    }
    worker({ concurrency: 4 });
    worker({ concurrency: 4 });
    await receiver.waitFor(40, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ids = receiver.received.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(40);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
  });

  it('stop() lets attempts in flight finish and record', async () => {
    const receiver = await startReceiver((_req, res) => setTimeout(() => res.writeHead(200).end(), 200));
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    const stop = startDeliveryWorker(runtime, { pollIntervalMs: 20, accountIds: [merchant.accountId] });
    try {
      await receiver.waitFor(1);
    } finally {
      await stop();
    }
    expect((await deliveryRow(event.id)).status).toBe('delivered');
  });
});
