import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, testAccount, testApp, testRuntime, type TestAccount } from './support/harness.ts';

let app: FastifyInstance;
let merchant: TestAccount;

beforeAll(async () => {
  const runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

function expectErrorObject(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
): void {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(res.body);
  expect(Object.keys(body)).toEqual(['error']);
  expect(typeof body.error.type).toBe('string');
  expect(typeof body.error.message).toBe('string');
  expect(res.body).not.toMatch(/at .*\.(ts|js):\d+/); // no stack trace
}

describe('every failure is an error object, never a 500', () => {
  it('malformed JSON → 400 invalid_request_error', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expectErrorObject(res, 400);
    expect(res.json().error.type).toBe('invalid_request_error');
    expect(res.json().error.message).toMatch(/not valid JSON/);
  });

  it('a 2 MB body → 413', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expectErrorObject(res, 413);
  });

  it('an unknown route → 404 naming the method and path', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nope?x=1' });
    expectErrorObject(res, 404);
    expect(res.json().error.message).toContain('GET /v1/nope');
  });

  it('Content-Type: text/plain on a POST → 415', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'text/plain' },
      payload: '{"name":"x"}',
    });
    expectErrorObject(res, 415);
    expect(res.json().error.message).toContain('Content-Type: application/json');
  });

  it('a POST body without any Content-Type → 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/keys', headers: bearer(merchant.apiKey), payload: 'name=x' });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expectErrorObject(res, res.statusCode);
  });

  it('a JSON body that is not an object → 400', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: '[1,2]',
    });
    expectErrorObject(res, 400);
  });

  it('an unknown parameter is named', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: { nme: 'typo' },
    });
    expectErrorObject(res, 400);
    expect(res.json().error.param).toBe('nme');
  });
});
