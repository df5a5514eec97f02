import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/core/errors.ts';
import { heldToolCall } from '../src/http/routes/tool-routes.ts';
import { METRICS_PATH } from '../src/metrics/plugin.ts';
import { TOOLS } from '../tools/registry.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount } from './support/harness.ts';
import { listRoutes } from './support/fuzz.ts';
import { createPayment } from './support/payments.ts';

interface JsonSchema {
  $ref?: string;
  properties?: Record<string, JsonSchema & { description?: string }>;
  required?: string[];
  enum?: string[];
  items?: JsonSchema;
}
interface Operation {
  security: unknown[];
  parameters?: Array<{ in: string; name: string }>;
  responses: Record<string, { description: string; content?: Record<string, { schema: JsonSchema }> }>;
}

let app: FastifyInstance;
let merchant: TestAccount;
let doc: {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
};

beforeAll(async () => {
  // With a metrics and an operator token, so that every route the app can have is registered (the walk below).
  const runtime = await testRuntime({
    METRICS_TOKEN: 'metrics-token-for-the-route-walk',
    OPERATOR_TOKEN: 'operator-token-for-the-route-walk',
  });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
});

/** A schema with its $ref followed (components only). */
function resolve(schema: JsonSchema): JsonSchema {
  const name = schema.$ref?.replace('#/components/schemas/', '');
  return name === undefined ? schema : doc.components.schemas[name]!;
}

function operation(method: string, path: string): Operation {
  const op = doc.paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  return op;
}

/** The JSON schema of one response of an operation. */
function responseSchema(method: string, path: string, status: string): JsonSchema {
  return operation(method, path).responses[status]!.content!['application/json']!.schema;
}

function statuses(method: string, path: string): string[] {
  return Object.keys(operation(method, path).responses);
}

/** Every route fastify registered (HEAD routes it adds for each GET left out), as "METHOD /path". */
function registeredRoutes(): string[] {
  return listRoutes(app).map((route) => `${route.method} ${route.url}`);
}

/**
 * Routes on the API host that are not the API, so not in the document. Anything else registered
 * must be documented.
 */
function notTheApi(route: string): boolean {
  const path = route.split(' ')[1]!;
  return (
    // The document itself.
    path === '/openapi.json' ||
    // Paystack's and Daraja's callbacks: sent by the providers, in their formats, proven by a
    // signature or a secret URL rather than an API key (docs/rails.md).
    path.startsWith('/hooks/') ||
    // The MCP Streamable HTTP transport: JSON-RPC, described by the MCP spec and its tools/list.
    path === '/mcp' ||
    // The dashboard: HTML pages and forms for a signed-in human, and their assets.
    path === '/dashboard' ||
    path.startsWith('/dashboard/') ||
    // The Prometheus scrape: operators', with its own token and the exposition text format.
    path === METRICS_PATH ||
    // The operator's own API (the reconciliation): instance-wide money, under OPERATOR_TOKEN, not an API key.
    path.startsWith('/operator/') ||
    // The connect and disconnect calls merchants used before collection became the operator's:
    // they only answer 403 saying so (docs/rails.md, "Who collects"); not an operation any more.
    route === 'PUT /v1/payment_rails/:rail' ||
    route === 'DELETE /v1/payment_rails/:rail'
  );
}

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

  it('documents every route the server registered, except the listed non-API ones', () => {
    const registered = registeredRoutes();
    // The walk itself works: it finds routes of every kind (tools, declared, excluded, suffixed).
    expect(registered).toEqual(
      expect.arrayContaining([
        'POST /v1/payouts',
        'GET /agent/actions.csv',
        'POST /v1/confirmations/:confirmation_id/approve',
        'POST /hooks/mpesa/:attempt/:token',
        `GET ${METRICS_PATH}`,
        'POST /operator/reconciliation/runs',
        'GET /dashboard/payments/:id',
      ]),
    );
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{([a-z_]+)\}/g, ':$1')}`),
    );
    expect(registered.filter((route) => !notTheApi(route) && !documented.includes(route))).toEqual([]);
    expect(documented.filter((route) => !registered.includes(route))).toEqual([]);
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
        // Whatever the server answered, the document says it can.
        for (const answer of [anonymous, authed]) {
          expect(Object.keys(op.responses), `${upper} ${path} answered ${answer.statusCode}`).toContain(
            String(answer.statusCode),
          );
        }
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
    const schema = resolve(responseSchema('get', '/v1/payments/{payment_id}', '200'));
    expect(Object.keys(res.json()).sort()).toEqual(Object.keys(schema.properties!).sort());
    for (const field of schema.required!) expect(res.json()).toHaveProperty(field);
  });
});

describe('the responses of each operation', () => {
  const allErrors = ['400', '401', '403', '413', '415', '429', '500', '503'];

  it('a payout: 200 Payout, 202 ConfirmationRequired, 402, 409, and the errors of an authed POST', () => {
    expect(statuses('post', '/v1/payouts').sort()).toEqual(['200', '202', '402', '409', ...allErrors].sort());
    expect(responseSchema('post', '/v1/payouts', '200')).toEqual({ $ref: '#/components/schemas/Payout' });
    expect(responseSchema('post', '/v1/payouts', '202')).toEqual({ $ref: '#/components/schemas/ConfirmationRequired' });
  });

  it('every money tool can be held (202) and can find the balance short (402); no other tool can', () => {
    for (const tool of TOOLS.filter((t) => t.http)) {
      const path = tool.http!.path.replace(/:([a-z_]+)/g, '{$1}');
      const declared = statuses(tool.http!.method.toLowerCase(), path);
      const money = tool.effect === 'money';
      expect(declared.includes('202'), `${tool.name} 202`).toBe(money);
      expect(declared.includes('402'), `${tool.name} 402`).toBe(money);
      expect(declared.includes('409'), `${tool.name} 409`).toBe(tool.http!.method === 'POST');
    }
  });

  it('ConfirmationRequired is the schema the route sends its 202 with', () => {
    const component = doc.components.schemas.ConfirmationRequired!;
    expect(Object.keys(component.properties!).sort()).toEqual(Object.keys(heldToolCall.shape).sort());
    expect(component.required!.sort()).toEqual(Object.keys(heldToolCall.shape).sort());
  });

  it('a read names 404 and no money statuses; a public read has no auth errors', () => {
    expect(statuses('get', '/v1/payments/{payment_id}').sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '429',
      '500',
      '503',
    ]);
    expect(statuses('get', '/checkout/{id}').sort()).toEqual(['200', '400', '404', '500', '503']);
    expect(statuses('get', '/v1/ping').sort()).toEqual(['200', '400', '401', '429', '500', '503']);
  });

  it('statuses only the handler knows are declared beside it', () => {
    expect(statuses('post', '/v1/test_helpers/balance/fund')).toEqual(expect.arrayContaining(['402', '404']));
    expect(statuses('post', '/v1/confirmations/{confirmation_id}/approve')).toEqual(
      expect.arrayContaining(['402', '409']),
    );
    expect(statuses('get', '/readyz')).toContain('503');
    // Whatever reads the database answers 503 with Retry-After while it is down; /healthz does not read it.
    expect((operation('get', '/v1/ping').responses['503'] as { headers?: object }).headers).toHaveProperty(
      'Retry-After',
    );
    expect(statuses('get', '/healthz')).not.toContain('503');
  });

  it('a CSV export is declared with its media type', () => {
    const ok = operation('get', '/agent/actions.csv').responses['200']!;
    expect(Object.keys(ok.content!)).toEqual(['text/csv']);
    expect(ok.content!['text/csv']!.schema).toMatchObject({ type: 'string' });
  });

  it('every error response is the Error component, whose code lists every code the service sends', () => {
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          expect(response.content, `${method} ${path} ${status}`).toEqual({
            'application/json': { schema: { $ref: '#/components/schemas/Error' } },
          });
        }
      }
    }
    const error = doc.components.schemas.Error!.properties!.error!;
    expect(error.properties!.code!.enum!.sort()).toEqual(
      Object.keys(ERROR_CODES)
        .filter((code) => code !== 'internal')
        .sort(),
    );
  });

  it('lists share the item components of the single reads', () => {
    const payments = resolve(responseSchema('get', '/v1/payments', '200'));
    expect(payments.properties!.data!.items).toEqual({ $ref: '#/components/schemas/Payment' });
    expect(responseSchema('get', '/v1/payouts/{payout_id}', '200')).toEqual({ $ref: '#/components/schemas/Payout' });
  });
});
