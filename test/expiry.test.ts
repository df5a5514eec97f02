import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { expireDuePayments, expiryJob } from '../src/payments/expiry.ts';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

describe('session expiry', () => {
  it('a ttl_minutes 1 session is expired once it lapses, with a payment.expired event, and the public read says so', async () => {
    const created = await createPayment(app, merchant.apiKey, {
      ttl_minutes: 1,
      webhook_url: 'https://93.184.216.34/h',
    });
    await expireDuePayments(runtime);
    expect((await app.inject({ method: 'GET', url: `/checkout/${created.id}` })).json().status).toBe('pending');

    runtime.clock.advance(61_000);
    expect(await expireDuePayments(runtime)).toBeGreaterThanOrEqual(1);
    const res = await app.inject({ method: 'GET', url: `/checkout/${created.id}` });
    expect(res.json().status).toBe('expired');
    const events = await runtime.db.selectFrom('events').selectAll().where('object_id', '=', created.id).execute();
    expect(events.map((e) => e.type)).toEqual(['payment.expired']);
    expect(events[0]!.webhook_url).toBe('https://93.184.216.34/h');
  });

  it('an expired session cannot be paid', async () => {
    const created = await createPayment(app, merchant.apiKey, { ttl_minutes: 1 });
    runtime.clock.advance(61_000);
    // Even before the job runs, a lapsed session refuses payment.
    const res = await payPayment(app, merchant.apiKey, created.id);
    expect(res.statusCode).toBe(409);
    expect(res.json().error.message).toMatch(/expired/);
  });

  it('a paid session is never expired', async () => {
    const created = await createPayment(app, merchant.apiKey, { ttl_minutes: 1 });
    await payPayment(app, merchant.apiKey, created.id);
    runtime.clock.advance(120_000);
    await expireDuePayments(runtime);
    expect((await app.inject({ method: 'GET', url: `/checkout/${created.id}` })).json().status).not.toBe('expired');
  });

  it('the running expiry job expires a lapsed session within its poll interval', async () => {
    const created = await createPayment(app, merchant.apiKey, { ttl_minutes: 1 });
    const stop = expiryJob(runtime);
    try {
      runtime.clock.advance(61_000);
      const deadline = Date.now() + 5000;
      let status = 'pending';
      while (status !== 'expired' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await app.inject({ method: 'GET', url: `/checkout/${created.id}` })).json().status;
      }
      expect(status).toBe('expired');
    } finally {
      await stop();
    }
  });
});
