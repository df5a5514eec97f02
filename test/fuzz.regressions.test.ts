import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { errorObjectProblems } from './support/fuzz.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { createPayment, createPaymentRequest, VALID_PAYMENT } from './support/payments.ts';
import { openInjectedMcpSession } from './support/mcp.ts';

/**
 * The cases the fuzz suites (test/fuzz.*.test.ts) found, kept as plain regression tests. Each was
 * a 500, or a rejection that was not the error object, before its fix.
 */

let runtime: TestRuntime;
let app: FastifyInstance;
let checkout: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  merchant = await testAccount(runtime);
});

afterAll(async () => {
  await checkout.close();
});

function get(url: string, key = merchant.apiKey): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: bearer(key) });
}

function expectErrorObject(res: LightMyRequestResponse, status: number): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(errorObjectProblems(res)).toEqual([]);
}

describe('a NUL character (U+0000) is a 400, not a 500 (Postgres refuses it in text)', () => {
  it('in a query parameter: GET /agent/actions.csv?starting_after=%00 and the other lists', async () => {
    for (const url of [
      '/agent/actions.csv?starting_after=%00',
      '/agent/actions?starting_after=%00',
      '/agent/actions?tool=a%00b',
      '/v1/payments?starting_after=%00',
      '/v1/payments?reference=%00',
      '/v1/events?starting_after=pay_%00',
      '/v1/events?object_id=%00',
      '/agent/runs?starting_after=%00',
    ]) {
      const res = await get(url);
      expectErrorObject(res, 400);
      expect(res.json().error.message).toMatch(/NUL character/);
    }
    // An event type is one of a closed list now: a NUL in it is refused before it gets that far.
    const type = await get('/v1/events?type=%00');
    expectErrorObject(type, 400);
    expect(type.json().error.param).toBe('type');
  });

  it('in a path id: every id lookup answers 400 or 404, never 500', async () => {
    for (const url of [
      '/v1/payments/%00',
      '/v1/payouts/po_%00',
      '/v1/events/%00',
      '/v1/events/%00/deliveries',
      '/v1/confirmations/%00',
      '/agent/runs/%00',
      '/checkout/pay_%00',
    ]) {
      const res = await get(url);
      expect(res.statusCode, `${url}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(500);
      expect(errorObjectProblems(res)).toEqual([]);
    }
  });

  it('in a JSON string field of a body', async () => {
    const res = await createPaymentRequest(app, merchant.apiKey, { ...VALID_PAYMENT, description: 'a\u0000b' });
    expectErrorObject(res, 400);
    const refund = await app.inject({
      method: 'POST',
      url: '/v1/payments/pay_x%00/refunds',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: '{}',
    });
    expectErrorObject(refund, 400);
  });

  it('over MCP: the tool result is an invalid_request_error, not an api_error', async () => {
    const session = await openInjectedMcpSession(app, merchant.apiKey, 'regression');
    const call = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: session,
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_payment', arguments: { payment_id: 'pay_\u0000' } },
      }),
    });
    const data = JSON.parse(
      call.body
        .split('\n')
        .find((line) => line.startsWith('data: '))!
        .slice(6),
    );
    expect(data.result.isError).toBe(true);
    expect(JSON.parse(data.result.content[0].text).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_request',
    });
  });
});

describe('routing errors fastify raises before any hook are error objects too', () => {
  it('a malformed percent-escape in the path (FST_ERR_BAD_URL) is a 400 error object with a Request-Id', async () => {
    for (const url of [
      '/v1/payments/%u0041',
      '/%C0%AE%C0%AE/pay_x',
      '/v1/payments/%E0%A4%A',
      '/dashboard/payments/%zz',
    ]) {
      const res = await get(url);
      expectErrorObject(res, 400);
      expect(res.json().error.message).toBe('The request URL is malformed.');
      expect(res.headers['request-id']).toMatch(/^req_/);
    }
  });

  it('a path segment over 100 characters (FST_ERR_MAX_PARAM_LENGTH, a 414 body of fastify’s own) is a 400 error object', async () => {
    for (const url of [
      `/checkout/${'a'.repeat(101)}`,
      `/v1/payments/${'9'.repeat(5000)}`,
      `/keys/${'k'.repeat(200)}/revoke`,
    ]) {
      const res = url.startsWith('/keys')
        ? await app.inject({ method: 'POST', url, headers: bearer(merchant.apiKey) })
        : await get(url);
      expectErrorObject(res, 400);
    }
    // 100 characters is still looked up (and not found).
    expectErrorObject(await get(`/checkout/${'a'.repeat(100)}`), 404);
  });

  it('on the checkout host: the payer gets the "checkout not found" page, the poller an error object', async () => {
    for (const url of [`/pay/${'a'.repeat(101)}`, '/pay/%zz', '/pay/%C0%AE']) {
      const res = await checkout.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('We could not find this checkout');
      expect(res.headers['content-security-policy']).toBeDefined();
    }
    const status = await checkout.inject({ method: 'GET', url: '/pay/%zz/status' });
    expectErrorObject(status, 400);
  });
});

describe('list_payments: a time the database cannot compare is a 400 naming the field', () => {
  it('created_gte=10081 (the year 10081 to Date.parse) and negative years', async () => {
    for (const [name, value] of [
      ['created_gte', '10081'],
      ['created_lte', '-271821-04-20T00:00:00Z'],
      ['created_gte', '+275760-09-13T00:00:00Z'],
      ['created_lte', '10000-01-01'],
    ]) {
      const res = await get(`/v1/payments?${name}=${encodeURIComponent(value!)}`);
      expectErrorObject(res, 400);
      expect(res.json().error.param).toBe(name);
    }
  });

  it('the full range still works', async () => {
    const payment = await createPayment(app, merchant.apiKey);
    const res = await get('/v1/payments?created_gte=0001-01-01T00:00:00Z&created_lte=9999-12-31T23:59:59Z');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.map((p: { id: string }) => p.id)).toContain(payment.id);
  });
});
