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
import { createPayment, createPaymentRequest, payPayment, VALID_PAYMENT } from './support/payments.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

const get = (url: string, key?: string) => app.inject({ method: 'GET', url, headers: key ? bearer(key) : {} });

describe('creating a payment', () => {
  it('returns id, checkout_url on the checkout host and status pending, with a locked quote', async () => {
    const res = await createPaymentRequest(app, merchant.apiKey, {
      ...VALID_PAYMENT,
      merchant_name: 'Ada',
      description: 'Jollof',
    });
    expect(res.statusCode).toBe(200);
    const payment = res.json();
    expect(payment.id).toMatch(/^pay_[0-9A-Za-z]{22}$/);
    expect(payment.status).toBe('pending');
    expect(payment.checkout_url).toBe(`http://localhost:3001/pay/${payment.id}`);
    expect(payment.amount).toBe(5000);
    expect(payment.currency).toBe('NGN');
    expect(payment.quote.source).toBe('sandbox');
    expect(payment.quote.settlement_asset).toBe('USDC');
    expect(payment.quote.settlement_amount).toBeGreaterThan(0);
    expect(payment.quote.settlement_amount + payment.quote.fee_amount).toBeCloseTo(
      payment.quote.gross_settlement_amount,
      6,
    );
    const ttl = new Date(payment.expires_at).getTime() - new Date(payment.created).getTime();
    expect(ttl).toBe(60 * 60_000); // the documented default ttl
  });

  it('uses CHECKOUT_BASE_URL for checkout_url', async () => {
    const custom = await testRuntime({ CHECKOUT_BASE_URL: 'https://pay.example.com/' });
    const customApp = await testApp(custom);
    const payment = await createPayment(customApp, merchant.apiKey);
    expect(payment.checkout_url).toBe(`https://pay.example.com/pay/${payment.id}`);
  });
});

describe('metadata comes back unchanged', () => {
  const metadata = {
    zeta: 1,
    alpha: { nested: { deeper: [1, 'two', { three: 3 }] } },
    '10': 'numeric-looking key',
    unicode: 'Ọ̀yọ́ – ₦ 💸 日本',
    numbers: [0, -1.5, 1e21, 123456789.123],
    flags: [true, false, null],
    empty: {},
  };

  it('on GET /checkout/:id and GET /v1/payments/:id, byte for byte as JSON', async () => {
    const created = await createPayment(app, merchant.apiKey, { metadata });
    const sent = JSON.stringify(metadata);
    expect(JSON.stringify(created.metadata)).toBe(sent);
    const pub = await get(`/checkout/${created.id}`);
    expect(JSON.stringify(pub.json().metadata)).toBe(sent);
    const full = await get(`/v1/payments/${created.id}`, merchant.apiKey);
    expect(JSON.stringify(full.json().metadata)).toBe(sent);
    // And the raw response text holds the same serialisation.
    expect(full.body).toContain(`"metadata":${sent}`);
  });

  // What JSON.parse + JSON.stringify would change: digits past a double, -0, trailing zeros,
  // escapes, an integer-like key written last, and the whitespace a caller's encoder may add.
  const exact = '{"f":12345678901234567890,"a":-0,"price":"1.50","p":1.50,"e":"\\u00e9","b":1,"1":2}';

  it('exactly as the caller wrote it: on create, both reads, the list and a replay', async () => {
    const body = `{"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks","metadata": ${exact.replace(',', ', ')} }`;
    const headers = {
      ...bearer(merchant.apiKey),
      'content-type': 'application/json',
      'idempotency-key': `meta-${Date.now()}`,
    };
    const created = await app.inject({ method: 'POST', url: '/v1/payments', headers, payload: body });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.body).toContain(`"metadata":${exact}`);
    const id = created.json().id as string;

    const replay = await app.inject({ method: 'POST', url: '/v1/payments', headers, payload: body });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(created.body);
    for (const [url, key] of [
      [`/v1/payments/${id}`, merchant.apiKey],
      [`/checkout/${id}`, undefined],
      ['/v1/payments?limit=100', merchant.apiKey],
    ] as const) {
      const res = await get(url, key);
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).toContain(`"metadata":${exact}`);
    }
    // Digits a double cannot hold still make it another request: the key's first body is not this one.
    const other = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers,
      payload: body.replace('12345678901234567890', '12345678901234567891'),
    });
    expect(other.statusCode).toBe(409);
    expect(other.json().error.type).toBe('idempotency_error');
    // Code that reads a field still sees ordinary JSON values.
    expect(created.json().metadata.f).toBe(Number('12345678901234567890'));
  });
});

describe('metadata nesting is bounded', () => {
  const post = (metadata: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: `{"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks","metadata":${metadata}}`,
    });
  const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{"n":1.0}${'}'.repeat(levels - 1)}`;

  it('32 levels are kept as written; 33 are a 400 naming metadata; a body too deep to parse is a 400', async () => {
    const kept = await post(nested(32));
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.body).toContain(`"metadata":${nested(32)}`);
    const refused = await post(nested(33));
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ param: 'metadata', message: expect.stringContaining('32 levels') });
    const abyss = await post(nested(100_000));
    expect(abyss.statusCode).toBe(400);
    expect(abyss.json().error.message).toContain('nests too deeply');
  });
});

describe('GET /checkout/:id (public)', () => {
  it("shows status and the payment's public fields, and nothing of the account or keys", async () => {
    const created = await createPayment(app, merchant.apiKey, {
      reference: `ord-${Date.now()}`,
      merchant_name: 'Ada',
      description: 'Jollof',
      payout_address: '0x52908400098527886e0f7030069857d2e4169ee7',
      webhook_url: 'https://93.184.216.34/hook',
    });
    const res = await get(`/checkout/${created.id}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      id: created.id,
      status: 'pending',
      amount: 5000,
      currency: 'NGN',
      merchant_name: 'Ada',
      description: 'Jollof',
      expires_at: created.expires_at,
      settlement: null,
    });
    // The payer's view: nothing from which the merchant's fee, rate or net can be worked out.
    expect(Object.keys(body).sort()).toEqual(
      [
        'id',
        'object',
        'livemode',
        'status',
        'amount',
        'currency',
        'merchant_name',
        'description',
        'metadata',
        'checkout_url',
        'redirect_url',
        'expires_at',
        'paid_at',
        'settlement',
      ].sort(),
    );
    for (const secret of ['quote', 'fee', 'rate', 'gross', 'gas', 'net']) expect(res.body).not.toContain(secret);
    expect(res.body).not.toContain(String(created.quote.settlement_amount));
    expect(res.body).not.toContain(merchant.accountId);
    expect(res.body).not.toContain('acct_');
    expect(res.body).not.toContain('0x52908400098527886e0f7030069857d2e4169ee7');
    expect(res.body).not.toContain('93.184.216.34');
    expect(res.body).not.toContain('sk_');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('is 404 with an error object for an unknown id', async () => {
    const res = await get('/checkout/pay_0000000000000000000000');
    expect(res.statusCode).toBe(404);
    expect(res.json().error.type).toBe('invalid_request_error');
  });
});

describe('isolation between accounts and modes', () => {
  it("another account's payment is 404, not 403", async () => {
    const other = await testAccount(runtime);
    const theirs = await createPayment(app, other.apiKey);
    const res = await get(`/v1/payments/${theirs.id}`, merchant.apiKey);
    expect(res.statusCode).toBe(404);
    const list = await get(`/v1/payments?limit=100`, merchant.apiKey);
    expect(list.body).not.toContain(theirs.id);
  });

  it('a live key does not see test payments and vice versa', async () => {
    const liveKey = await extraKey(runtime, merchant.accountId, { livemode: true });
    const testPayment = await createPayment(app, merchant.apiKey);
    const livePayment = await createPayment(app, liveKey);
    expect(livePayment.livemode).toBe(true);
    expect((await get(`/v1/payments/${testPayment.id}`, liveKey)).statusCode).toBe(404);
    expect((await get(`/v1/payments/${livePayment.id}`, merchant.apiKey)).statusCode).toBe(404);
    expect((await get(`/v1/payments/${livePayment.id}`, liveKey)).statusCode).toBe(200);
  });

  it('test helpers are 404 for live keys', async () => {
    const liveKey = await extraKey(runtime, merchant.accountId, { livemode: true });
    const livePayment = await createPayment(app, liveKey);
    const res = await payPayment(app, liveKey, livePayment.id);
    expect(res.statusCode).toBe(404);
    expect((await get(`/v1/payments/${livePayment.id}`, liveKey)).json().status).toBe('pending');
  });

  it('needs payments:write to create and payments:read to read (403 error object)', async () => {
    const readOnly = await extraKey(runtime, merchant.accountId, { scopes: ['payments:read'] });
    const res = await createPaymentRequest(app, readOnly, VALID_PAYMENT);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.type).toBe('permission_error');
    const writeOnly = await extraKey(runtime, merchant.accountId, { scopes: ['payments:write'] });
    const created = await createPayment(app, writeOnly);
    expect((await get(`/v1/payments/${created.id}`, writeOnly)).statusCode).toBe(403);
  });
});

describe('the sandbox rail through the test helper', () => {
  it('succeeded → paid with a payment.paid event; a second pay is refused', async () => {
    const created = await createPayment(app, merchant.apiKey);
    const paid = await payPayment(app, merchant.apiKey, created.id);
    expect(paid.statusCode).toBe(200);
    expect(paid.json().status).toBe('paid');
    const again = await payPayment(app, merchant.apiKey, created.id);
    expect(again.statusCode).toBe(409);
    const events = await runtime.db.selectFrom('events').selectAll().where('object_id', '=', created.id).execute();
    expect(events.map((e) => e.type)).toEqual(['payment.paid']);
  });

  it('declined → stays pending with the failed attempt recorded, and can be retried', async () => {
    const created = await createPayment(app, merchant.apiKey);
    const declined = await payPayment(app, merchant.apiKey, created.id, 'declined');
    expect(declined.statusCode).toBe(200);
    expect(declined.json().status).toBe('pending');
    expect(declined.json().attempt.outcome).toBe('declined');
    const attempts = await runtime.db
      .selectFrom('payment_attempts')
      .selectAll()
      .where('payment_id', '=', created.id)
      .execute();
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.failure_reason).toBe('sandbox_declined');
    expect((await payPayment(app, merchant.apiKey, created.id)).json().status).toBe('paid');
  });
});

describe('listing payments', () => {
  it('pages newest first with starting_after and filters by status and reference', async () => {
    const account = await testAccount(runtime);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      runtime.clock.advance(1000);
      ids.push((await createPayment(app, account.apiKey, { reference: `list-${i}` })).id);
    }
    const first = (await get('/v1/payments?limit=2', account.apiKey)).json();
    expect(first.data.map((p: { id: string }) => p.id)).toEqual([ids[4], ids[3]]);
    expect(first.has_more).toBe(true);
    const second = (await get(`/v1/payments?limit=2&starting_after=${ids[3]}`, account.apiKey)).json();
    expect(second.data.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1]]);
    const last = (await get(`/v1/payments?limit=2&starting_after=${ids[1]}`, account.apiKey)).json();
    expect(last.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
    expect(last.has_more).toBe(false);

    await payPayment(app, account.apiKey, ids[2]!);
    const paid = (await get('/v1/payments?status=paid', account.apiKey)).json();
    expect(paid.data.map((p: { id: string }) => p.id)).toEqual([ids[2]]);
    const byRef = (await get('/v1/payments?reference=list-1', account.apiKey)).json();
    expect(byRef.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
  });

  it('refuses a bad limit naming it', async () => {
    const res = await get('/v1/payments?limit=500', merchant.apiKey);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.param).toBe('limit');
  });
});
