import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { createPaymentRequest, VALID_PAYMENT } from './support/payments.ts';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

async function countPayments(accountId: string): Promise<number> {
  const row = await runtime.db
    .selectFrom('payments')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('Idempotency-Key', () => {
  it('50 concurrent POSTs with one key create exactly one payment and all answer with its id', async () => {
    const account = await testAccount(runtime);
    const key = `idem-${Date.now()}`;
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        createPaymentRequest(app, account.apiKey, VALID_PAYMENT, { 'idempotency-key': key }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
    const ids = new Set(responses.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    expect(await countPayments(account.accountId)).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(49);
  });

  it('replays the first response for the same key and body', async () => {
    const first = await createPaymentRequest(
      app,
      merchant.apiKey,
      { ...VALID_PAYMENT, metadata: { a: 1 } },
      { 'idempotency-key': 'same-1' },
    );
    const second = await createPaymentRequest(
      app,
      merchant.apiKey,
      { metadata: { a: 1 }, ...VALID_PAYMENT },
      { 'idempotency-key': 'same-1' },
    );
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toBe(first.body);
  });

  it('refuses the same key with a different body: 409 idempotency_error', async () => {
    await createPaymentRequest(app, merchant.apiKey, VALID_PAYMENT, { 'idempotency-key': 'diff-1' });
    const res = await createPaymentRequest(
      app,
      merchant.apiKey,
      { ...VALID_PAYMENT, amount: 6000 },
      { 'idempotency-key': 'diff-1' },
    );
    expect(res.statusCode).toBe(409);
    expect(res.json().error.type).toBe('idempotency_error');
  });

  it('does not store a validation failure: a corrected retry with the key succeeds', async () => {
    const bad = await createPaymentRequest(
      app,
      merchant.apiKey,
      { ...VALID_PAYMENT, amount: -1 },
      { 'idempotency-key': 'fix-1' },
    );
    expect(bad.statusCode).toBe(400);
    const good = await createPaymentRequest(app, merchant.apiKey, VALID_PAYMENT, { 'idempotency-key': 'fix-1' });
    expect(good.statusCode).toBe(200);
  });

  it('keys are per account: another account may use the same key', async () => {
    const other = await testAccount(runtime);
    const a = await createPaymentRequest(app, merchant.apiKey, VALID_PAYMENT, { 'idempotency-key': 'shared-key' });
    const b = await createPaymentRequest(app, other.apiKey, VALID_PAYMENT, { 'idempotency-key': 'shared-key' });
    expect(b.statusCode).toBe(200);
    expect(b.json().id).not.toBe(a.json().id);
  });

  it('refuses a malformed key naming the header', async () => {
    const res = await createPaymentRequest(app, merchant.apiKey, VALID_PAYMENT, { 'idempotency-key': 'x'.repeat(256) });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.param).toBe('Idempotency-Key');
  });
});

describe('a repeated reference', () => {
  it('with the same fields returns the existing payment', async () => {
    const body = { ...VALID_PAYMENT, reference: 'order-77', metadata: { sku: 'x' } };
    const first = (await createPaymentRequest(app, merchant.apiKey, body)).json();
    const again = await createPaymentRequest(app, merchant.apiKey, body);
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(first.id);
  });

  it('with different fields is 409 naming reference', async () => {
    await createPaymentRequest(app, merchant.apiKey, { ...VALID_PAYMENT, reference: 'order-78' });
    const res = await createPaymentRequest(app, merchant.apiKey, {
      ...VALID_PAYMENT,
      reference: 'order-78',
      amount: 1,
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.param).toBe('reference');
  });

  it('concurrent creates with one reference make one payment', async () => {
    const account = await testAccount(runtime);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        createPaymentRequest(app, account.apiKey, { ...VALID_PAYMENT, reference: 'race' }),
      ),
    );
    expect(new Set(responses.map((r) => r.json().id)).size).toBe(1);
    expect(await countPayments(account.accountId)).toBe(1);
  });
});
