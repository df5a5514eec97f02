// Acceptance 4: webhook targets on loopback, private, link-local, unique-local or metadata
// addresses are refused at creation (400 naming webhook_url) and again at connect time, and a
// redirect is never followed. This file runs WITHOUT WEBHOOK_ALLOW_PRIVATE.

import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { runDeliveryBatch } from '../src/webhooks/delivery-worker.ts';
import type { HostLookup } from '../src/webhooks/ssrf-guard.ts';
import { validateWebhookUrl } from '../src/webhooks/webhook-url.ts';
import { bearer, type TestAccount, type TestRuntime, testAccount, testApp, testRuntime } from './support/harness.ts';
import { createPaymentRequest, VALID_PAYMENT } from './support/payments.ts';
import { startReceiver, writeEvent } from './support/webhooks.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  expect(runtime.config.webhookAllowPrivate).toBe(false);
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

const resolvesToLoopback: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }];

async function attemptsOf(eventId: string) {
  const res = await app.inject({
    method: 'GET',
    url: `/v1/events/${eventId}/deliveries`,
    headers: bearer(merchant.apiKey),
  });
  return res.json().data;
}

describe('at creation', () => {
  it.each([
    'http://127.0.0.1/x',
    'http://10.0.0.5/',
    'http://169.254.169.254/',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://100.64.0.1/',
    'http://[fe80::1]/',
    'http://localhost:3000/hook',
    'http://0x7f000001/',
    'ftp://hooks.merchant.example/',
  ])('POST /v1/payments refuses webhook_url %s with a 400 naming webhook_url', async (url) => {
    const res = await createPaymentRequest(app, merchant.apiKey, { ...VALID_PAYMENT, webhook_url: url });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'webhook_url' });
    expect(res.json().error.message).toMatch(/webhook_url/);
  });

  it('refuses a hostname that resolves to 127.0.0.1', async () => {
    expect(
      await validateWebhookUrl('https://sneaky.merchant.example/hook', {
        allowPrivate: false,
        lookup: resolvesToLoopback,
      }),
    ).toMatchObject({ ok: false, reason: 'non_public_address', message: expect.stringContaining('127.0.0.1') });
  });

  it('accepts a public target', async () => {
    const res = await createPaymentRequest(app, merchant.apiKey, {
      ...VALID_PAYMENT,
      webhook_url: 'https://93.184.215.14/hooks/plainpay',
    });
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('at connect time (the URL got past creation: DNS changed since, or it was stored in development)', () => {
  it('a private literal is refused without connecting', async () => {
    const target = await startReceiver();
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: target.url });
    expect(await runDeliveryBatch(runtime, { accountIds: [merchant.accountId] })).toBe(1);
    const [attempt] = await attemptsOf(event.id);
    expect(attempt).toMatchObject({ status: 'failed', response_status: null, error: { code: 'refused_target' } });
    expect(attempt.error.message).toContain('loopback');
    expect(target.received).toHaveLength(0);
  });

  it('a hostname that now resolves to 127.0.0.1 is refused without connecting (DNS rebinding)', async () => {
    const target = await startReceiver();
    const event = await writeEvent(runtime, {
      accountId: merchant.accountId,
      webhookUrl: `http://sneaky.merchant.example:${target.port}/hooks`,
    });
    expect(await runDeliveryBatch(runtime, { accountIds: [merchant.accountId], lookup: resolvesToLoopback })).toBe(1);
    const [attempt] = await attemptsOf(event.id);
    expect(attempt).toMatchObject({ status: 'failed', error: { code: 'refused_target' } });
    expect(attempt.error.message).toContain('127.0.0.1');
    expect(target.received).toHaveLength(0);
  });

  it('metadata and unique-local targets are refused too', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00::1]/', 'http://10.0.0.5/']) {
      const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: url });
      expect(await runDeliveryBatch(runtime, { accountIds: [merchant.accountId] })).toBe(1);
      const [attempt] = await attemptsOf(event.id);
      expect(attempt, url).toMatchObject({ status: 'failed', error: { code: 'refused_target' } });
    }
  });

  it('a public-looking URL that redirects to a private address: the redirect is not followed, the target gets nothing', async () => {
    const victim = await startReceiver();
    const redirector = await startReceiver((_req, res, index) =>
      res
        .writeHead(index === 0 ? 302 : 307, {
          location: index === 0 ? `http://127.0.0.1:${victim.port}/admin` : 'http://169.254.169.254/latest/meta-data/',
        })
        .end(),
    );
    const event = await writeEvent(runtime, {
      accountId: merchant.accountId,
      webhookUrl: `http://hooks.public-merchant.example:${redirector.port}/hooks`,
    });
    // The "public" host is a stand-in on 127.0.0.1, and reaching it at all needs the private
    // allowance for this one call. Redirects are never followed regardless (node:http does not
    // follow them and the worker treats any 3xx as a failed attempt), so the private allowance
    // does not widen what this proves; without it the first hop would already be refused.
    const options = { accountIds: [merchant.accountId], allowPrivate: true, lookup: resolvesToLoopback };
    expect(await runDeliveryBatch(runtime, options)).toBe(1);
    await runtime.db
      .updateTable('event_deliveries')
      .set({ next_attempt_at: runtime.clock.now() })
      .where('event_id', '=', event.id)
      .execute();
    expect(await runDeliveryBatch(runtime, options)).toBe(1);

    expect(redirector.received).toHaveLength(2);
    expect(victim.received).toHaveLength(0);
    const attempts = await attemptsOf(event.id);
    expect(attempts.map((a: { status: string; response_status: number }) => [a.status, a.response_status])).toEqual([
      ['failed', 302],
      ['failed', 307],
    ]);
    for (const attempt of attempts) expect(attempt.error.code).toBe('redirect');
    const row = await runtime.db
      .selectFrom('event_deliveries')
      .select('status')
      .where('event_id', '=', event.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
  });
});
