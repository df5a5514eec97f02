import * as crypto from 'node:crypto';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { createLogger } from '../src/core/logger.ts';
import { csrfTokenMatches } from '../src/dashboard/csrf.ts';
import type { Database } from '../src/db/database.ts';
import { noNotifications } from '../src/db/notifications.ts';
import { generateApiKey, hashApiKey } from '../src/domain/api-key-secret.ts';
import { type ApiKeyCheck, authenticate, type KeyLookups } from '../src/http/plugins/auth.ts';
import { generateWebhookSecret, signWebhook, verifyWebhook } from '../src/webhooks/signer.ts';
import { bearer, testAccount, testApp, testDatabase, testRuntime, type TestRuntime } from './support/harness.ts';

/**
 * Comparing a presented secret with a stored one must not take longer the more of it matches.
 * plainpay never compares API key secrets at all: it hashes the presented key and looks the hash up,
 * so no secret reaches a comparison, in the code or in the database. The two comparisons of
 * secrets that remain (the dashboard's CSRF token, a webhook signature) use timingSafeEqual on
 * equal-length buffers. These tests check that structurally, not by timing:
 *
 * - authenticate, against a database stub that records every query, sends only the SHA-256 of the
 *   presented key (a malformed key sends nothing), and accepts exactly what that lookup returns;
 * - through the whole app (API, dashboard sign-in and session, MCP), no query carries a presented
 *   key or a session cookie;
 * - csrfTokenMatches and verifyWebhook call timingSafeEqual, with buffers of equal length.
 */

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});
const timingSafeEqual = vi.mocked(crypto.timingSafeEqual);

interface Recorded {
  sql: string;
  parameters: readonly unknown[];
}

/** A database that records each query and answers with `answer` (no rows by default). */
function stubDatabase(answer: (query: CompiledQuery) => UnknownRow[] = () => []) {
  const queries: Recorded[] = [];
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      queries.push({ sql: query.sql, parameters: query.parameters });
      return { rows: answer(query) as R[] };
    },
    // biome-ignore lint/correctness/useYield: never streamed in these tests.
    async *streamQuery() {
      throw new Error('not streamed');
    },
  };
  const driver: Driver = {
    async init() {},
    async acquireConnection() {
      return connection;
    },
    async beginTransaction() {},
    async commitTransaction() {},
    async rollbackTransaction() {},
    async releaseConnection() {},
    async destroy() {},
  };
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  // What the key check uses, without notifications: every request reads the stubbed database.
  const runtime: ApiKeyCheck = {
    db,
    clock: new ManualClock(),
    logger: createLogger('silent'),
    notifications: noNotifications,
  };
  return { runtime, queries };
}

function keyRow(secret: string, accountId = 'acct_stub') {
  const now = new Date();
  return {
    id: 'key_stub',
    account_id: accountId,
    name: null,
    livemode: secret.startsWith('sk_live_'),
    display_prefix: secret.slice(0, 12),
    last4: secret.slice(-4),
    secret_hash: hashApiKey(secret),
    scopes: ['payments:read'],
    created_at: now,
    last_used_at: now,
    expires_at: null,
    revoked_at: null,
    rotated_from: null,
  };
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'accepted',
    (error: { code?: string }) => error.code ?? 'threw',
  );

describe('API key authentication compares no secrets', () => {
  it('looks a key up by its SHA-256 only: the secret itself never reaches the database', async () => {
    const { runtime, queries } = stubDatabase();
    const secret = generateApiKey(true).secret;
    for (const lookups of [undefined, new Map() as KeyLookups]) {
      queries.length = 0;
      expect(await outcome(authenticate(runtime, `Bearer ${secret}`, new Map(), lookups))).toBe(
        'authentication_failed',
      );
      expect(queries).toHaveLength(1);
      expect(queries[0]!.parameters).toEqual([hashApiKey(secret)]);
      const text = JSON.stringify(queries);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice(8, 40));
    }
  });

  it('a malformed or mistyped key (bad checksum) is refused without any query', async () => {
    const { runtime, queries } = stubDatabase();
    const secret = generateApiKey(false).secret;
    const mistyped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    for (const presented of [mistyped, secret.slice(0, -1), `${secret}x`, 'sk_test_short', 'x'.repeat(5000)]) {
      expect(await outcome(authenticate(runtime, `Bearer ${presented}`, new Map()))).toBe('authentication_failed');
    }
    expect(queries).toEqual([]);
  });

  it('the decision is the lookup: whatever row the hash finds is the key, nothing else is compared', async () => {
    const secret = generateApiKey(false).secret;
    // The stub answers only the query for this key's hash.
    const { runtime } = stubDatabase((query) =>
      query.parameters.includes(hashApiKey(secret)) ? [keyRow(secret, 'acct_found')] : [],
    );
    const auth = await authenticate(runtime, `Bearer ${secret}`, new Map([['key_stub', Date.now()]]));
    expect(auth).toMatchObject({ accountId: 'acct_found', keyId: 'key_stub', livemode: false });
    expect(await outcome(authenticate(runtime, `Bearer ${generateApiKey(false).secret}`, new Map()))).toBe(
      'authentication_failed',
    );
  });
});

/** Records the operation tree of every query the app sends (parameters included). */
class QueryRecorder implements KyselyPlugin {
  readonly seen: string[] = [];
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.seen.push(JSON.stringify(args.node, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

describe('through the whole app, no query carries a presented secret', () => {
  let runtime: TestRuntime;
  const recorder = new QueryRecorder();

  beforeAll(async () => {
    const { db, kind } = await testDatabase();
    runtime = await testRuntime({}, { database: { db: db.withPlugin(recorder), kind } });
  });

  afterAll(() => {
    expect(recorder.seen.length).toBeGreaterThan(10);
  });

  it('API requests, a mistyped key, dashboard sign-in and its session, and MCP', async () => {
    const app = await testApp(runtime);
    const merchant = await testAccount(runtime);
    recorder.seen.length = 0;
    const key = merchant.apiKey;
    // One character changed, always: reversing the last five (as this read before) left a key
    // whose last five read the same both ways unchanged, about once in 3,844 runs.
    const mistyped = `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`;
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(key) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/ping', headers: bearer(mistyped) })).statusCode).toBe(401);
    const signIn = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: key }).toString(),
    });
    expect(signIn.statusCode).toBe(303);
    const cookie = /plainpay_session=([^;]+)/.exec(String(signIn.headers['set-cookie']))![1]!;
    expect(
      (await app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: `plainpay_session=${cookie}` } }))
        .statusCode,
    ).toBe(200);
    const mcp = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...bearer(key), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'timing', version: '1' } },
      }),
    });
    expect(mcp.statusCode).toBe(200);

    const all = recorder.seen.join('\n');
    expect(all).toContain(hashApiKey(key));
    for (const secret of [key, mistyped, cookie]) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(secret.replace(/^sk_(live|test)_/, '').slice(0, 30));
    }
  });
});

describe('the comparisons of secrets that remain are constant-time', () => {
  beforeEach(() => {
    timingSafeEqual.mockClear();
  });

  it('the dashboard CSRF token: timingSafeEqual on equal-length digests, whatever was presented', () => {
    const token = crypto.randomBytes(32).toString('base64url');
    expect(csrfTokenMatches(token, token)).toBe(true);
    expect(csrfTokenMatches(token, `${token.slice(0, -1)}x`)).toBe(false);
    expect(csrfTokenMatches(token, 'short')).toBe(false);
    expect(csrfTokenMatches(token, 'x'.repeat(10_000))).toBe(false);
    expect(timingSafeEqual).toHaveBeenCalledTimes(4);
    for (const [left, right] of timingSafeEqual.mock.calls) {
      expect((left as Buffer).length).toBe((right as Buffer).length);
    }
    // Nothing presented: refused before any comparison (no secret is involved).
    expect(csrfTokenMatches(token, '')).toBe(false);
    expect(csrfTokenMatches(token, null)).toBe(false);
    expect(timingSafeEqual).toHaveBeenCalledTimes(4);
  });

  it('a webhook signature: timingSafeEqual on equal-length HMACs', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ id: 'evt_1', type: 'payment.paid' });
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ secrets: [secret], id: 'evt_1', timestamp: now, body });
    expect(verifyWebhook({ secrets: [secret], headers, body, now })).toMatchObject({ ok: true });
    expect(timingSafeEqual).toHaveBeenCalled();
    const forged = { ...headers, 'webhook-signature': `v1,${Buffer.alloc(32, 1).toString('base64')}` };
    timingSafeEqual.mockClear();
    expect(verifyWebhook({ secrets: [secret], headers: forged, body, now })).toMatchObject({ ok: false });
    expect(timingSafeEqual).toHaveBeenCalledTimes(1);
    for (const [left, right] of timingSafeEqual.mock.calls) {
      expect((left as Buffer).length).toBe((right as Buffer).length);
    }
  });
});
