import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { buildTenant, issueKey, objectKindOf, type Tenant } from './support/fuzz-fixtures.ts';
import {
  amountText,
  apiResponseProblems,
  badAuthorization,
  bodyText,
  contentType,
  definedHeaders,
  describeRequest,
  documentedOperations,
  encodedBody,
  expectedMinor,
  FIELD_SAMPLES,
  type FieldSamples,
  fillPath,
  HTTP_METHODS,
  idempotencyKey,
  junkQuery,
  junkSegment,
  listRoutes,
  mutatedBody,
  nastyString,
  type Operation,
  objectArbitrary,
  pathParam,
  queryString,
  StateWatch,
} from './support/fuzz.ts';
import { testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { post } from './support/money.ts';

/**
 * Fuzzes every REST operation of the API host (each one /openapi.json documents, and every other
 * route the app serves outside /dashboard and /mcp, which test/fuzz.hosts.test.ts covers) with
 * generated bodies, headers, paths and query strings. Every answer must be below 500, every
 * rejection a well-formed error object, and a rejected request must leave both tenants' state as it
 * was (except the audit trail of refused calls, which the pipeline writes by design).
 *
 * Reproduce a failure with the seed fast-check prints: FUZZ_SEED=<seed> npx vitest run test/fuzz.api.
 */

const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 170);
const RUNS_UNKNOWN_ROUTES = 600;
const RUNS_AMOUNT_TEXTS = 300;
const RUNS_BODY_ENCODINGS = 300;
/** This file's share of the suite's ≥ 10,000 generated requests (test/fuzz.hosts.test.ts has the rest). */
const MINIMUM_REQUESTS = 6_500;

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
let limitedKey: string;
let revokedKey: string;
let operations: Operation[];
let state: StateWatch;
const counts = new Map<string, number>();
/** Status codes seen per operation: shows the fuzzer gets past validation, not only what it sent. */
const statuses = new Map<string, Map<number, number>>();

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  a = await buildTenant(runtime, app, 'Fuzzed merchant');
  b = await buildTenant(runtime, app, 'Other merchant');
  limitedKey = (await issueKey(runtime, a.accountId, false, ['payments:read'])).key;
  const revoked = await issueKey(runtime, a.accountId, false);
  await runtime.db
    .updateTable('api_keys')
    .set({ revoked_at: runtime.clock.now() })
    .where('id', '=', revoked.keyId)
    .execute();
  revokedKey = revoked.key;
  operations = await documentedOperations(app);
  state = await new StateWatch(runtime.db, [a.accountId, b.accountId]).start();
});

afterAll(async () => {
  await chain.close();
});

/** Real ids for a path parameter: the fuzzed account's (both modes) and the other account's. */
function realIds(path: string, param: string): string[] {
  const kind = objectKindOf(path, param);
  if (!kind) return [];
  // Never the fuzzing keys themselves: revoking them would end the run's coverage, not find a bug.
  return [a.test.ids[kind], a.live.ids[kind], b.test.ids[kind], b.live.ids[kind]];
}

function authorization(): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 30, arbitrary: fc.constant(`Bearer ${a.test.key}`) },
    { weight: 3, arbitrary: fc.constant(`Bearer ${a.live.key}`) },
    { weight: 2, arbitrary: fc.constant(`Bearer ${limitedKey}`) },
    { weight: 1, arbitrary: fc.constant(`Bearer ${revokedKey}`) },
    { weight: 4, arbitrary: badAuthorization(a.test.key) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** Header values as a client could send them (no CR, LF or NUL: those never reach a server). */
function headerSafe(value: string | undefined): string | undefined {
  return value?.replace(/[\r\n\0]/g, '');
}

const extraHeaders = fc.record(
  {
    'x-request-id': nastyString,
    accept: fc.constantFrom('application/json', 'text/html', '*/*', '', 'application/xml', 'text/event-stream'),
    'content-length': fc.constantFrom('0', '1', '-1', 'abc', '99999999999'),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'x-unknown'),
    'transfer-encoding': fc.constantFrom('chunked', 'identity'),
    cookie: nastyString,
    'x-forwarded-for': fc.constantFrom('127.0.0.1', '::1', 'evil'),
  },
  { requiredKeys: [] },
);

interface FuzzRequest {
  operation: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | undefined;
}

async function send(family: string, request: FuzzRequest): Promise<void> {
  const res = await app.inject({
    method: request.method as 'GET',
    url: request.url,
    headers: request.headers,
    ...(request.payload === undefined ? {} : { payload: request.payload }),
  });
  counts.set(family, (counts.get(family) ?? 0) + 1);
  const seen = statuses.get(request.operation) ?? new Map<number, number>();
  seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
  statuses.set(request.operation, seen);
  const problems = apiResponseProblems(res, request.method);
  const changed = await state.check(res.statusCode >= 400);
  if (changed.length > 0) problems.push(`rejected with ${res.statusCode} but changed ${changed.join(', ')}`);
  if (problems.length > 0) {
    throw new Error(
      `${problems.join('; ')}\n  request: ${describeRequest(request)}\n  response: ${res.statusCode} ${res.body.slice(0, 600)}`,
    );
  }
}

/** Known-good bodies an operation's schema alone cannot produce (the policy is one nested document). */
async function samplesFor(): Promise<FieldSamples> {
  const policy = await app.inject({
    method: 'GET',
    url: '/v1/policy',
    headers: { authorization: `Bearer ${a.test.key}` },
  });
  return { ...FIELD_SAMPLES, policy: [policy.json().policy] };
}

function requestFor(op: Operation, samples: FieldSamples): fc.Arbitrary<FuzzRequest> {
  const params = fc.record(
    Object.fromEntries(op.params.map((p) => [p, pathParam(realIds(op.path, p))])) as Record<
      string,
      fc.Arbitrary<string>
    >,
  );
  const base = op.body
    ? op.operationId === 'put_policy'
      ? fc.oneof(fc.constantFrom(...(samples.policy as unknown[])), objectArbitrary(op.body, samples, 0))
      : objectArbitrary(op.body, samples, 0)
    : undefined;
  const takesBody = op.method !== 'GET';
  return fc
    .record({
      params,
      query:
        op.method === 'GET'
          ? queryString(op.query, samples)
          : fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: junkQuery }),
      payload: takesBody
        ? bodyText(base)
        : fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: bodyText(undefined) }),
      contentType: contentType(),
      authorization: authorization(),
      idempotencyKey,
      // Odd transport headers on one request in six: most of them end the request before validation.
      extra: fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: extraHeaders }),
    })
    .map((r) => ({
      operation: `${op.method} ${op.path}`,
      method: op.method,
      url: fillPath(op.path, r.params) + r.query,
      headers: definedHeaders({
        ...Object.fromEntries(Object.entries(r.extra ?? {}).map(([k, v]) => [k, headerSafe(v)])),
        authorization: headerSafe(r.authorization),
        'content-type': r.payload === undefined ? undefined : r.contentType,
        'idempotency-key': headerSafe(r.idempotencyKey),
      }),
      payload: r.payload,
    }));
}

function family(path: string): string {
  const segment = path.split('/').filter((s) => s && s !== 'v1' && !s.startsWith(':'))[0] ?? 'root';
  return segment.replace(/\.json$/, '');
}

async function fuzz(op: Operation, numRuns: number): Promise<void> {
  const samples = await samplesFor();
  await fc.assert(
    fc.asyncProperty(requestFor(op, samples), (request) => send(family(op.path), request)),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
}

describe('fuzzing the REST API', () => {
  it('documents the operations being fuzzed (sanity: the list is not empty and ids have fixtures)', () => {
    expect(operations.length).toBeGreaterThan(25);
    for (const op of operations) {
      for (const param of op.params) {
        expect(objectKindOf(op.path, param), `${op.method} ${op.path} :${param} has no fixture kind`).toBeDefined();
      }
    }
  });

  it('the state watch sees a change, and leaves out the audit trail of refused calls', async () => {
    const watch = await new StateWatch(runtime.db, [a.accountId]).start();
    expect(await watch.check(true)).toEqual([]);
    await runtime.db
      .updateTable('payments')
      .set({ description: 'changed' })
      .where('id', '=', a.test.ids.payment)
      .execute();
    expect(await watch.check(true)).toEqual(['payments']);
    await runtime.db
      .updateTable('api_keys')
      .set({ revoked_at: runtime.clock.now() })
      .where('id', '=', a.live.spareKeyId)
      .execute();
    expect(await watch.check(true)).toEqual(['api_keys']);
    // A refused money call is recorded (agent_actions, action_log) by design: not a change.
    const refused = await post(app, a.test.key, '/v1/payouts', { amount: -1, to_address: 'nobody' });
    expect(refused.statusCode).toBe(400);
    expect(await watch.check(true)).toEqual([]);
    await state.start();
  });

  it('every documented operation: no 5xx, error objects, rejected requests change nothing', async () => {
    for (const op of operations) await fuzz(op, RUNS_PER_OPERATION);
  }, 600_000);

  it('every route the document leaves out (openapi.json, rail callbacks): same rules', async () => {
    const documented = new Set(operations.map((op) => `${op.method} ${op.path}`));
    const others = listRoutes(app).filter(
      (r) => !documented.has(`${r.method} ${r.url}`) && !r.url.startsWith('/dashboard') && r.url !== '/mcp',
    );
    expect(others.map((r) => `${r.method} ${r.url}`)).toEqual(expect.arrayContaining(['GET /openapi.json']));
    for (const route of others) {
      const twin = operations.find((op) => op.method === route.method && route.url.startsWith(op.path));
      await fuzz(
        {
          method: route.method,
          path: route.url,
          operationId: route.url,
          scope: 'any',
          params: [...route.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!),
          body: undefined,
          query: twin?.query,
        },
        RUNS_PER_OPERATION,
      );
    }
  }, 300_000);

  it('unknown routes, wrong methods, traversal and encoded segments: 404/4xx error objects, never 5xx', async () => {
    const known = ['v1', 'payments', 'payouts', 'keys', 'events', 'agent', 'checkout', 'confirmations', 'policy'];
    const path = fc
      .array(
        fc.oneof(fc.constantFrom(...known), junkSegment, fc.constantFrom(a.test.ids.payment, b.test.ids.payment)),
        {
          minLength: 1,
          maxLength: 6,
        },
      )
      .map((segments) => `/${segments.join('/')}`)
      .filter((p) => !/^\/+(dashboard|mcp)(\/|$|\?)/i.test(p));
    const request = fc
      .record({
        method: fc.constantFrom(...HTTP_METHODS),
        path: fc.oneof(
          path,
          fc.constantFrom(
            '/',
            '//',
            '/./v1/ping',
            '/v1/../v1/ping',
            '/v1/ping/',
            '/V1/PING',
            '/v1//payments',
            '/%2e%2e/',
          ),
        ),
        query: fc.oneof(fc.constant(''), junkQuery),
        payload: fc.option(bodyText(mutatedBody(fc.constant({ amount: 1 }))), { freq: 3 }),
        contentType: contentType(),
        authorization: authorization(),
      })
      .map((r) => ({
        operation: 'unknown routes',
        method: r.method,
        url: r.path + r.query,
        headers: definedHeaders({
          authorization: headerSafe(r.authorization),
          'content-type': r.payload === null ? undefined : r.contentType,
        }),
        payload: r.method === 'GET' || r.method === 'HEAD' ? undefined : (r.payload ?? undefined),
      }));
    await fc.assert(
      fc.asyncProperty(request, (r) => send('unknown routes', r)),
      { numRuns: RUNS_UNKNOWN_ROUTES, ...(seed === undefined ? {} : { seed }) },
    );
  }, 300_000);

  it('amount texts: an accepted amount is the digits written, to the unit; any other is a 400 naming amount', async () => {
    const currencies: Array<[string, number]> = [
      ['NGN', 2],
      ['UGX', 0],
      ['USDC', 6],
    ];
    const request = fc.record({ amount: amountText, currency: fc.constantFrom(...currencies) });
    await fc.assert(
      fc.asyncProperty(request, async ({ amount, currency: [code, decimals] }) => {
        const res = await app.inject({
          method: 'POST',
          url: '/v1/payments',
          headers: { authorization: `Bearer ${a.test.key}`, 'content-type': 'application/json' },
          payload: `{"amount":${amount},"currency":"${code}","redirect_url":"https://shop.example/thanks"}`,
        });
        counts.set('amount texts', (counts.get('amount texts') ?? 0) + 1);
        const expected = expectedMinor(amount, decimals);
        const about = `amount ${amount} ${code}: ${res.statusCode} ${res.body.slice(0, 300)}`;
        const problems = apiResponseProblems(res, 'POST');
        const changed = await state.check(res.statusCode >= 400);
        expect([...problems, ...changed], about).toEqual([]);
        if (expected === 'refused') {
          expect(res.statusCode, about).toBe(400);
          expect(res.json().error.param, about).toBe('amount');
          return;
        }
        expect(res.statusCode, about).toBe(200);
        const row = await runtime.db
          .selectFrom('payments')
          .select('amount_minor')
          .where('id', '=', res.json().id)
          .executeTakeFirstOrThrow();
        expect(row.amount_minor, about).toBe(expected);
      }),
      { numRuns: RUNS_AMOUNT_TEXTS, ...(seed === undefined ? {} : { seed }) },
    );
  }, 300_000);

  it('body encodings: only UTF-8 JSON is read; every other body is a 4xx error object that moves nothing', async () => {
    const templates = [
      [
        '/v1/payments',
        '{"amount":5000,"currency":"NGN","redirect_url":"https://shop.example/thanks","description":"a@@b"}',
      ],
      ['/v1/payouts', '{"amount":0.01,"to_address":"0x2222222222222222222222222222222222222222","memo":"a@@b"}'],
    ] as const;
    const request = fc
      .constantFrom(...templates)
      .chain(([url, template]) => encodedBody(template).map((body) => ({ url, body })));
    await fc.assert(
      fc.asyncProperty(request, async ({ url, body }) => {
        const res = await app.inject({
          method: 'POST',
          url,
          headers: { authorization: `Bearer ${a.test.key}`, ...body.headers },
          payload: body.payload,
        });
        counts.set('body encodings', (counts.get('body encodings') ?? 0) + 1);
        const about = `${url} ${body.variant}: ${res.statusCode} ${res.body.slice(0, 300)}`;
        const problems = apiResponseProblems(res, 'POST');
        const changed = await state.check(res.statusCode >= 400);
        expect([...problems, ...changed], about).toEqual([]);
        if (body.allowed) expect(res.statusCode, about).toBe(200);
        else expect([400, 415], about).toContain(res.statusCode);
      }),
      { numRuns: RUNS_BODY_ENCODINGS, ...(seed === undefined ? {} : { seed }) },
    );
  }, 300_000);

  it(`sent at least ${MINIMUM_REQUESTS} generated requests`, () => {
    const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
    console.info(`REST fuzz: ${total} requests by family ${JSON.stringify(Object.fromEntries(counts))}`);
    if (process.env.FUZZ_VERBOSE) {
      for (const [operation, seen] of statuses) {
        console.info(
          `  ${operation}: ${[...seen]
            .sort(([x], [y]) => x - y)
            .map(([s, n]) => `${s}×${n}`)
            .join(' ')}`,
        );
      }
    }
    expect(total).toBeGreaterThanOrEqual(MINIMUM_REQUESTS);
  });
});
