import { connect } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckoutApp } from '../src/checkout/app.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import { isAppError } from '../src/core/errors.ts';
import { API_KEY_SCOPES } from '../src/domain/api-key-secret.ts';
import { METADATA_MAX_BYTES } from '../tools/schemas.ts';
import { createPayment as createPaymentTool } from '../tools/create-payment.ts';
import { documentedOperations, errorObjectProblems, fillPath, StateWatch } from './support/fuzz.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { createPayment, createPaymentRequest, VALID_PAYMENT } from './support/payments.ts';

/**
 * Size limits (issue 10): a body over the limit is a 413 error object on every operation that
 * takes one; metadata over 8 KB is a 400 naming metadata on every channel; very long headers,
 * paths and queries are refused cleanly; the page hosts bound their forms. None of it changes state.
 */

let runtime: TestRuntime;
let app: FastifyInstance;
let checkout: FastifyInstance;
let merchant: TestAccount;
let state: StateWatch;

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
  checkout = await buildCheckoutApp(runtime);
  merchant = await testAccount(runtime);
  state = await new StateWatch(runtime.db, [merchant.accountId]).start();
});

afterAll(async () => {
  await checkout.close();
});

function expectError(res: LightMyRequestResponse, status: number, code?: string): void {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(status);
  expect(errorObjectProblems(res)).toEqual([]);
  if (code) expect(res.json().error.code).toBe(code);
}

/** A JSON object body of exactly `bytes` bytes. */
function bodyOfSize(bytes: number): string {
  const frame = '{"description":""}';
  return `{"description":"${'x'.repeat(bytes - frame.length)}"}`;
}

describe('request bodies', () => {
  it('the 413 names the configured limit, not a fixed one', async () => {
    const small = await testApp(await testRuntime({ BODY_LIMIT_BYTES: '65536' }));
    const res = await small.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: bodyOfSize(65_537),
    });
    expectError(res, 413, 'payload_too_large');
    expect(res.json().error.message).toContain('limited to 64 KB');
  });

  it('a body one byte over the limit is a 413 error object on every operation that takes a body, and changes nothing', async () => {
    const limit = runtime.config.bodyLimitBytes;
    expect(limit).toBe(1_048_576);
    const writes = (await documentedOperations(app)).filter((op) => op.method !== 'GET');
    expect(writes.length).toBeGreaterThanOrEqual(15);
    const oversized = bodyOfSize(limit + 1);
    for (const op of writes) {
      const res = await app.inject({
        method: op.method as 'POST',
        url: fillPath(op.path, Object.fromEntries(op.params.map((p) => [p, 'pay_x']))),
        headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
        payload: oversized,
      });
      expectError(res, 413, 'payload_too_large');
      expect(res.json().error.message).toMatch(/1 MB/);
      expect(await state.check(true), `${op.method} ${op.path}`).toEqual([]);
    }
    // MCP parses its own bodies, under the same limit.
    const mcp = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        ...bearer(merchant.apiKey),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: oversized,
    });
    expect(mcp.statusCode).toBe(413);
    // A 2 MB body.
    expectError(
      await createPaymentRequest(app, merchant.apiKey, { ...VALID_PAYMENT, description: 'x'.repeat(2 * limit) }),
      413,
    );
  });

  it('a body of exactly the limit is read (and judged on its content)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: bodyOfSize(runtime.config.bodyLimitBytes),
    });
    expectError(res, 400);
    expect(res.json().error.param).toBeDefined();
  });

  it('deep nesting inside the limit is a 400, never a stack overflow', async () => {
    for (const payload of [
      `{"metadata":${'['.repeat(500_000)}${']'.repeat(500_000)}}`,
      `{"metadata":{"a":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}`,
      `${'['.repeat(524_000)}${']'.repeat(524_000)}`,
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/payments',
        headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
      expect(errorObjectProblems(res)).toEqual([]);
    }
  });
});

/** Metadata whose JSON is exactly `bytes` bytes long, built from `unit` (1 or 2 bytes in UTF-8). */
function metadataOfSize(bytes: number, unit = 'x'): Record<string, string> {
  const frame = '{"k":""}'.length;
  const unitBytes = Buffer.byteLength(unit);
  const count = Math.floor((bytes - frame) / unitBytes);
  const pad = bytes - frame - count * unitBytes;
  return { k: unit.repeat(count) + 'y'.repeat(pad) };
}

describe('metadata', () => {
  it(`up to ${METADATA_MAX_BYTES} bytes of JSON is kept unchanged; one byte more is a 400 naming metadata`, async () => {
    expect(METADATA_MAX_BYTES).toBe(8192);
    for (const unit of ['x', 'é', '😀']) {
      const fits = metadataOfSize(METADATA_MAX_BYTES, unit);
      expect(Buffer.byteLength(JSON.stringify(fits))).toBe(METADATA_MAX_BYTES);
      const payment = await createPayment(app, merchant.apiKey, { metadata: fits });
      expect(payment.metadata).toEqual(fits);
      await state.start();
      const over = metadataOfSize(METADATA_MAX_BYTES + 1, unit);
      expect(Buffer.byteLength(JSON.stringify(over))).toBe(METADATA_MAX_BYTES + 1);
      const res = await createPaymentRequest(app, merchant.apiKey, { ...VALID_PAYMENT, metadata: over });
      expectError(res, 400, 'invalid_request');
      expect(res.json().error.param).toBe('metadata');
      expect(res.json().error.message).toContain(String(METADATA_MAX_BYTES));
      expect(await state.check(true)).toEqual([]);
    }
  });

  it('the same rule on the agent and MCP channels (the tool validates, not the route)', async () => {
    const over = metadataOfSize(METADATA_MAX_BYTES + 1);
    for (const channel of ['api', 'agent', 'mcp'] as const) {
      const error = await executeTool(
        createPaymentTool,
        { ...VALID_PAYMENT, metadata: over },
        {
          runtime,
          actor: {
            accountId: merchant.accountId,
            livemode: false,
            keyId: null,
            scopes: new Set(API_KEY_SCOPES),
            channel,
          },
        },
      ).catch((e: unknown) => e);
      expect(isAppError(error) && error.param, channel).toBe('metadata');
    }
  });
});

describe('headers, paths and queries', () => {
  it('a 64 KB Authorization header is a 401 error object', async () => {
    expectError(
      await app.inject({ method: 'GET', url: '/v1/ping', headers: { authorization: `Bearer ${'a'.repeat(64_000)}` } }),
      401,
      'authentication_failed',
    );
  });

  it('an Idempotency-Key over 255 characters is a 400 naming it, and changes nothing', async () => {
    for (const length of [256, 64_000]) {
      const res = await createPaymentRequest(app, merchant.apiKey, VALID_PAYMENT, {
        'idempotency-key': 'k'.repeat(length),
      });
      expectError(res, 400, 'invalid_request');
      expect(res.json().error.param).toBe('Idempotency-Key');
      expect(await state.check(true)).toEqual([]);
    }
  });

  it('a 64 KB X-Request-Id is not echoed: the request gets an id of its own', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/v1/ping',
      headers: { ...bearer(merchant.apiKey), 'x-request-id': 'r'.repeat(64_000) },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['request-id']).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('a 64 KB Content-Type is a 415 error object', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': `application/${'j'.repeat(64_000)}` },
      payload: JSON.stringify(VALID_PAYMENT),
    });
    expectError(res, 415, 'unsupported_media_type');
  });

  it('a 64 KB cookie on the dashboard is no session: a page sends the browser to sign in', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/dashboard/payments',
      headers: { cookie: `plainpay_session=${'c'.repeat(64_000)}` },
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/dashboard\/sign-in/);
  });

  it('a 100 KB query string and a 100 KB path are refused as error objects', async () => {
    expectError(
      await app.inject({
        method: 'GET',
        url: `/v1/payments?reference=${'r'.repeat(100_000)}`,
        headers: bearer(merchant.apiKey),
      }),
      400,
    );
    expectError(
      await app.inject({ method: 'GET', url: `/v1/payments/${'p'.repeat(100_000)}`, headers: bearer(merchant.apiKey) }),
      400,
    );
    expectError(
      await app.inject({ method: 'GET', url: `/${'n'.repeat(100_000)}`, headers: bearer(merchant.apiKey) }),
      404,
    );
  });

  it('on a real socket, headers past Node’s limit are a 431 and the server keeps serving', async () => {
    const server = await testApp(runtime);
    const address = await server.listen({ port: 0, host: '127.0.0.1' });
    const port = Number(new URL(address).port);
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        // write, not end: a half-closed socket may be closed before a slower answer is sent.
        const socket = connect(port, '127.0.0.1', () => socket.write(request));
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk;
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    const huge = await raw(
      `GET /v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(100_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    const normal = await raw(
      `GET /v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${merchant.apiKey}\r\nConnection: close\r\n\r\n`,
    );
    expect(normal).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('the page hosts bound their forms', () => {
  it('a dashboard form over 16 KB is a 413 page', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: merchant.apiKey, pad: 'x'.repeat(16 * 1024) }).toString(),
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('a checkout form over 4 KB is a 413 page, and the payment is not paid', async () => {
    const payment = await createPayment(app, merchant.apiKey);
    await state.start();
    const res = await checkout.inject({
      method: 'POST',
      url: `/pay/${payment.id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: `outcome=succeeded&pad=${'x'.repeat(4096)}`,
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(await state.check(true)).toEqual([]);
  });
});
