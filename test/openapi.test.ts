import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, testAccount, testApp, testRuntime, type TestAccount } from './support/harness.ts';
import { createPayment } from './support/payments.ts';

let app: FastifyInstance;
let merchant: TestAccount;
let doc: {
  paths: Record<string, Record<string, { security: unknown[]; parameters?: Array<{ in: string; name: string }> }>>;
};

beforeAll(async () => {
  const runtime = await testRuntime();
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
});

describe('/openapi.json', () => {
  it('validates as OpenAPI 3.1 with an external validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes every field of every request body and query', () => {
    const undescribed: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const body = (
          op as {
            requestBody?: {
              content: { 'application/json': { schema: { properties?: Record<string, { description?: string }> } } };
            };
          }
        ).requestBody?.content['application/json'].schema;
        for (const [name, schema] of Object.entries(body?.properties ?? {})) {
          if (!schema.description) undescribed.push(`${method.toUpperCase()} ${path} body.${name}`);
        }
        for (const param of (op.parameters ?? []) as Array<{ in: string; name: string; description?: string }>) {
          if (param.in === 'query' && !param.description)
            undescribed.push(`${method.toUpperCase()} ${path} query.${param.name}`);
        }
      }
    }
    expect(undescribed).toEqual([]);
  });

  it('every documented operation exists on the server, with the documented auth', async () => {
    const payment = await createPayment(app, merchant.apiKey);
    const walked: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const url = path.replace(/\{[a-z_]+\}/g, payment.id);
        const upper = method.toUpperCase() as 'GET' | 'POST';
        expect(app.hasRoute({ method: upper, url: path.replace(/\{([a-z_]+)\}/g, ':$1') }), `${upper} ${path}`).toBe(
          true,
        );
        const anonymous = await app.inject({ method: upper, url });
        if (op.security.length > 0) {
          expect(anonymous.statusCode, `${upper} ${path} without a key`).toBe(401);
        } else {
          expect(anonymous.statusCode, `${upper} ${path} is public`).not.toBe(401);
        }
        const authed = await app.inject({ method: upper, url, headers: bearer(merchant.apiKey) });
        expect(authed.statusCode, `${upper} ${path}`).toBeLessThan(500);
        expect(authed.body).not.toContain('Unrecognized request URL');
        walked.push(`${upper} ${path}`);
      }
    }
    expect(walked).toEqual(
      expect.arrayContaining([
        'GET /v1/ping',
        'POST /v1/payments',
        'GET /v1/payments/{payment_id}',
        'GET /checkout/{id}',
      ]),
    );
  });

  it('the documented response of a read matches what the server returns', async () => {
    const payment = await createPayment(app, merchant.apiKey, { metadata: { a: [1] } });
    const res = await app.inject({
      method: 'GET',
      url: `/v1/payments/${payment.id}`,
      headers: bearer(merchant.apiKey),
    });
    const schema = (
      doc.paths['/v1/payments/{payment_id}']!.get as unknown as {
        responses: {
          '200': {
            content: { 'application/json': { schema: { required: string[]; properties: Record<string, unknown> } } };
          };
        };
      }
    ).responses['200'].content['application/json'].schema;
    expect(Object.keys(res.json()).sort()).toEqual(Object.keys(schema.properties).sort());
    for (const field of schema.required) expect(res.json()).toHaveProperty(field);
  });
});
