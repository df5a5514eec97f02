import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { isAppError } from '../src/core/errors.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import type { AnyTool, Channel } from '../src/core/tool.ts';
import { API_KEY_SCOPES, type ApiKeyScope, hashApiKey } from '../src/domain/api-key-secret.ts';
import type { AuthContext } from '../src/http/plugins/auth.ts';
import { buildMcpServer } from '../src/mcp/server.ts';
import { screen, type Section } from '../src/dashboard/view.ts';
import { TOOLS } from '../tools/registry.ts';
import {
  buildTenant,
  issueKey,
  type ModeObjects,
  type ObjectKind,
  objectKindOf,
  type Tenant,
} from './support/fuzz-fixtures.ts';
import {
  documentedOperations,
  errorObjectProblems,
  fillPath,
  listRoutes,
  type Operation,
  type Route,
  StateWatch,
} from './support/fuzz.ts';
import { testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { ADDRESS_B } from './support/money.ts';

/**
 * The security matrix (issue 10), enumerated from what exists so that a new endpoint or tool is
 * covered without anyone remembering to add it: every operation /openapi.json lists, every tool in
 * the registry (on every channel, and over MCP), and every dashboard route.
 *
 * - Another account's id, and the same account's id from the other mode, is a 404 error object
 *   (never a 403, never the object), and changes nothing.
 * - Every operation that needs a scope, called with a key holding every scope but that one, is a
 *   403 permission_error error object, and changes nothing.
 */

let chain: ChainConnection;
let runtime: TestRuntime;
let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
let operations: Operation[];
let state: StateWatch;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  a = await buildTenant(runtime, app, 'Merchant A');
  b = await buildTenant(runtime, app, 'Merchant B');
  operations = await documentedOperations(app);
  state = await new StateWatch(runtime.db, [a.accountId, b.accountId]).start();
});

afterAll(async () => {
  await chain.close();
});

type Mode = 'test' | 'live';
const MODES: readonly Mode[] = ['test', 'live'];
const other = (mode: Mode): Mode => (mode === 'test' ? 'live' : 'test');

/** A body that passes validation, so the id lookup is what answers (most operations take {}). */
const VALID_BODIES: Record<string, unknown> = { reply_to_agent_run: { message: 'yes' } };

function inject(method: string, url: string, key: string, body?: unknown): Promise<LightMyRequestResponse> {
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${key}`, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    ...(hasBody ? { payload: JSON.stringify(body ?? {}) } : {}),
  });
}

function describeRes(res: LightMyRequestResponse): string {
  return `${res.statusCode} ${res.body.slice(0, 300)}`;
}

interface Case {
  label: string;
  caller: ModeObjects;
  /** Whose ids the path is filled with. */
  owner: ModeObjects;
}

function foreignCases(): Case[] {
  const cases: Case[] = [];
  for (const mode of MODES) {
    cases.push({ label: `another account's ${mode} id`, caller: a[mode], owner: b[mode] });
    cases.push({ label: `the ${other(mode)}-mode id, with a ${mode} key`, caller: a[mode], owner: a[other(mode)] });
  }
  return cases;
}

function idValues(op: { path: string; params: string[] }, owner: ModeObjects): Record<string, string> {
  return Object.fromEntries(op.params.map((p) => [p, owner.ids[objectKindOf(op.path, p)!]]));
}

describe('another account’s id and the other mode’s id are 404 everywhere', () => {
  it('every id-taking REST operation (from /openapi.json)', async () => {
    const idOps = operations.filter((op) => op.params.length > 0 && op.scope !== null);
    expect(idOps.length).toBeGreaterThan(10);
    const covered: string[] = [];
    for (const op of idOps) {
      const kinds = op.params.map((p) => objectKindOf(op.path, p));
      expect(kinds, `${op.method} ${op.path}: add its id kind to test/support/fuzz-fixtures.ts`).not.toContain(
        undefined,
      );
      for (const c of foreignCases()) {
        const url = fillPath(op.path, idValues(op, c.owner));
        const res = await inject(op.method, url, c.caller.key, VALID_BODIES[op.operationId]);
        const where = `${op.method} ${op.path} with ${c.label}: ${describeRes(res)}`;
        expect(res.statusCode, where).toBe(404);
        expect(errorObjectProblems(res), where).toEqual([]);
        expect(Object.keys(res.json()), where).toEqual(['error']);
        expect(await state.check(true), `${where} changed state`).toEqual([]);
        covered.push(`${op.method} ${op.path} (${c.label})`);
      }
    }
    expect(covered.length).toBeGreaterThan(40);
  });

  it('the public checkout status is the one id-taking operation without a key, and says nothing about the account', async () => {
    // GET /checkout/:id is the payer's poll: the unguessable id is the capability, by design.
    const publicIdOps = operations.filter((op) => op.params.length > 0 && op.scope === null);
    expect(publicIdOps.map((op) => `${op.method} ${op.path}`)).toEqual(['GET /checkout/:id']);
    const res = await app.inject({ method: 'GET', url: `/checkout/${b.test.ids.payment}` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(b.accountId);
    expect(res.body).not.toContain(ADDRESS_B);
  });

  it('the same requests with the owner’s key are not 404 (the ids are real and the routes reachable)', async () => {
    for (const op of operations.filter((o) => o.params.length > 0 && o.scope !== null)) {
      for (const mode of MODES) {
        // Test helpers exist for test-mode keys only: with a live key they are 404 by design.
        if (mode === 'live' && op.path.startsWith('/v1/test_helpers/')) continue;
        const res = await inject(
          op.method,
          fillPath(op.path, idValues(op, a[mode])),
          a[mode].key,
          VALID_BODIES[op.operationId],
        );
        expect(res.statusCode, `${op.method} ${op.path} with the owner's ${mode} key: ${describeRes(res)}`).not.toBe(
          404,
        );
        expect(res.statusCode).toBeLessThan(500);
      }
      await state.start();
    }
  });
});

/** The base input of each tool that takes an id: the id field is replaced by another tenant's. */
const TOOL_INPUTS: Record<string, Record<string, unknown>> = {
  get_payment: {},
  get_payout: {},
  refund_payment: {},
  split_revenue: { splits: [{ to_address: ADDRESS_B, share_bps: 10_000 }] },
  list_refunds: {},
  list_revenue_shares: {},
  get_confirmation: {},
};

const KIND_OF_FIELD: Record<string, ObjectKind> = {
  payment_id: 'payment',
  payout_id: 'payout',
  confirmation_id: 'confirmation',
};

/** The id fields of a tool's input (every tool's input is a zod object). */
function idFieldsOf(tool: AnyTool): string[] {
  const shape = (tool.input as unknown as { shape?: Record<string, unknown> }).shape;
  if (!shape) throw new Error(`${tool.name}: its input is not an object schema`);
  return Object.keys(shape).filter((k) => k.endsWith('_id'));
}

function authOf(
  objects: ModeObjects,
  accountId: string,
  mode: Mode,
  scopes: readonly string[] = API_KEY_SCOPES,
): AuthContext {
  return { accountId, keyId: objects.keyId, livemode: mode === 'live', scopes: new Set(scopes), assistant: false };
}

async function mcpClient(auth: AuthContext): Promise<Client> {
  const server = buildMcpServer(runtime, auth);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'security-matrix', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

function toolError(result: CallToolResult): { type?: string; code?: string } {
  const first = result.content[0];
  return first?.type === 'text' ? (JSON.parse(first.text) as { error: { type?: string; code?: string } }).error : {};
}

describe('tools: another account’s id and the other mode’s id are not_found on every channel', () => {
  const idTools = TOOLS.filter((tool) => idFieldsOf(tool).length > 0);

  it('knows every id-taking tool of the registry', () => {
    expect(idTools.length).toBeGreaterThanOrEqual(4);
    for (const tool of idTools) {
      expect(TOOL_INPUTS[tool.name], `${tool.name} takes an id: give it a base input in TOOL_INPUTS`).toBeDefined();
      for (const field of idFieldsOf(tool)) expect(KIND_OF_FIELD[field], `${tool.name}.${field}`).toBeDefined();
    }
  });

  it('executeTool on the api, agent and mcp channels', async () => {
    const channels: Channel[] = ['api', 'agent', 'mcp'];
    for (const tool of idTools) {
      for (const field of idFieldsOf(tool)) {
        const kind = KIND_OF_FIELD[field]!;
        for (const c of foreignCases()) {
          const mode: Mode = c.caller === a.test ? 'test' : 'live';
          for (const channel of channels) {
            const input = { ...TOOL_INPUTS[tool.name], [field]: c.owner.ids[kind] };
            const outcome = await executeTool(tool, input, {
              runtime,
              actor: { ...authOf(c.caller, a.accountId, mode), channel },
            }).then(
              (result) => `resolved ${result.kind}`,
              (error: unknown) => (isAppError(error) ? error.code : `threw ${String(error)}`),
            );
            expect(outcome, `${tool.name} on ${channel} with ${c.label}`).toBe('not_found');
          }
        }
      }
    }
    // Refused calls on logged channels are audit rows by design; nothing else moved.
    expect(await state.check(true)).toEqual([]);
  });

  it('over MCP: tool calls are isError not_found, and payment://{id} resources are not found', async () => {
    for (const mode of MODES) {
      const client = await mcpClient(authOf(a[mode], a.accountId, mode));
      for (const tool of idTools) {
        for (const field of idFieldsOf(tool)) {
          const kind = KIND_OF_FIELD[field]!;
          for (const c of foreignCases().filter((x) => x.caller === a[mode])) {
            const result = (await client.callTool({
              name: tool.name,
              arguments: { ...TOOL_INPUTS[tool.name], [field]: c.owner.ids[kind] },
            })) as CallToolResult;
            expect(result.isError, `${tool.name} over MCP with ${c.label}`).toBe(true);
            expect(toolError(result), `${tool.name} over MCP with ${c.label}`).toMatchObject({
              type: 'invalid_request_error',
              code: 'not_found',
            });
          }
        }
      }
      for (const foreign of [b[mode].ids.payment, a[other(mode)].ids.payment]) {
        await expect(client.readResource({ uri: `payment://${foreign}` })).rejects.toThrow(/No such payment/);
      }
      const own = await client.readResource({ uri: `payment://${a[mode].ids.payment}` });
      expect(JSON.stringify(own.contents)).toContain(a[mode].ids.payment);
      await client.close();
    }
    expect(await state.check(true)).toEqual([]);
  });

  it('through the agent: asking about another account’s payment finds nothing', async () => {
    const res = await inject('POST', '/agent/settle', a.test.key, {
      instruction: `what's the status of ${b.test.ids.payment}`,
    });
    expect(res.statusCode).toBe(200);
    const run = res.json();
    expect(run.actions.length).toBeGreaterThan(0);
    for (const action of run.actions) {
      expect(action.status).toBe('failed');
      expect(action.error).toMatchObject({ code: 'not_found' });
    }
    expect(JSON.stringify(run)).not.toContain(b.accountId);
    await state.start();
  });
});

describe('a key without the needed scope is a 403 permission_error everywhere', () => {
  it('every REST operation that needs a scope (from /openapi.json)', async () => {
    const scoped = operations.filter(
      (op): op is Operation & { scope: ApiKeyScope } => op.scope !== null && op.scope !== 'any',
    );
    expect(scoped.length).toBeGreaterThan(25);
    const keys = new Map<string, string>();
    for (const mode of MODES) {
      for (const scope of API_KEY_SCOPES) {
        const without = API_KEY_SCOPES.filter((s) => s !== scope);
        keys.set(`${mode}:${scope}`, (await issueKey(runtime, a.accountId, mode === 'live', without)).key);
      }
    }
    await state.start();
    for (const op of scoped) {
      for (const mode of MODES) {
        const url = fillPath(op.path, idValues(op, a[mode]));
        const res = await inject(op.method, url, keys.get(`${mode}:${op.scope}`)!, VALID_BODIES[op.operationId]);
        const where = `${op.method} ${op.path} with a ${mode} key lacking '${op.scope}': ${describeRes(res)}`;
        expect(res.statusCode, where).toBe(403);
        expect(errorObjectProblems(res), where).toEqual([]);
        expect(res.json().error.type, where).toBe('permission_error');
        expect(res.json().error.message, where).toContain(op.scope);
        expect(await state.check(true), `${where} changed state`).toEqual([]);
      }
    }
  });

  it('every tool, on every channel, through executeTool', async () => {
    for (const tool of TOOLS) {
      const without = API_KEY_SCOPES.filter((s) => s !== tool.scope);
      for (const channel of ['api', 'agent', 'mcp'] as const) {
        const outcome = await executeTool(
          tool,
          {},
          {
            runtime,
            actor: { ...authOf(a.test, a.accountId, 'test', without), channel },
          },
        ).then(
          (result) => `resolved ${result.kind}`,
          (error: unknown) => (isAppError(error) ? error.code : `threw ${String(error)}`),
        );
        // Validation runs first, so an empty input may be refused as invalid: give a valid one
        // where {} is not, and then the scope must be what refuses.
        if (outcome === 'invalid_request') {
          const valid = await validInputOf(tool);
          const retry = await executeTool(tool, valid, {
            runtime,
            actor: { ...authOf(a.test, a.accountId, 'test', without), channel },
          }).then(
            (result) => `resolved ${result.kind}`,
            (error: unknown) => (isAppError(error) ? error.code : `threw ${String(error)}`),
          );
          expect(retry, `${tool.name} on ${channel} without '${tool.scope}'`).toBe('permission_denied');
        } else {
          expect(outcome, `${tool.name} on ${channel} without '${tool.scope}'`).toBe('permission_denied');
        }
      }
    }
    expect(await state.check(true)).toEqual([]);
  });

  it('over MCP: a tool outside the key’s scopes is not listed, and calling it is a permission_error', async () => {
    for (const tool of TOOLS) {
      const without = API_KEY_SCOPES.filter((s) => s !== tool.scope);
      const client = await mcpClient(authOf(a.test, a.accountId, 'test', without));
      const listed = (await client.listTools()).tools.map((t) => t.name);
      expect(listed, `${tool.name} is listed to a key without '${tool.scope}'`).not.toContain(tool.name);
      const result = (await client.callTool({
        name: tool.name,
        arguments: await validInputOf(tool),
      })) as CallToolResult;
      expect(result.isError, tool.name).toBe(true);
      expect(toolError(result), tool.name).toMatchObject({ type: 'permission_error' });
      await client.close();
    }
    expect(await state.check(true)).toEqual([]);
  });

  it('through the agent: a key without payouts:write cannot pay out, whatever it instructs', async () => {
    const key = (await issueKey(runtime, a.accountId, false, ['agent', 'payments:read'])).key;
    await state.start();
    const res = await inject('POST', '/agent/settle', key, { instruction: `pay out 1 USDC to ${ADDRESS_B}` });
    expect(res.statusCode).toBe(200);
    const run = res.json() as { status: string; actions: { tool: string; status: string; error: unknown }[] };
    // The agent is only offered the tools the key may use: it refuses, or its call is refused.
    for (const action of run.actions.filter((x) => x.tool === 'create_payout')) {
      expect(action.status).toBe('failed');
      expect(action.error).toMatchObject({ type: 'permission_error' });
    }
    expect(run.status, JSON.stringify(run)).toBe('rejected');
    const payouts = await runtime.db
      .selectFrom('payouts')
      .select('id')
      .where('account_id', '=', a.accountId)
      .where('channel', '=', 'agent')
      .execute();
    expect(payouts).toEqual([]);
  });
});

/** A valid input for each tool (the registry's tools; a new one fails here until it has one). */
async function validInputOf(tool: AnyTool): Promise<Record<string, unknown>> {
  const inputs: Record<string, Record<string, unknown>> = {
    create_payment: { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/thanks' },
    get_payment: { payment_id: a.test.ids.payment },
    list_payments: {},
    get_balance: {},
    get_revenue: { from: '2026-03-10T00:00:00Z', to: '2026-03-11T00:00:00Z' },
    create_payout: { amount: 1, to_address: ADDRESS_B },
    get_payout: { payout_id: a.test.ids.payout },
    refund_payment: { payment_id: a.test.ids.payment },
    split_revenue: { amount: 1, splits: [{ to_address: ADDRESS_B, share_bps: 10_000 }] },
    list_pending_confirmations: {},
    get_confirmation: { confirmation_id: a.test.ids.confirmation },
    list_payouts: {},
    list_refunds: {},
    list_revenue_shares: {},
  };
  const input = inputs[tool.name];
  if (!input) throw new Error(`${tool.name}: add a valid input to validInputOf in test/security.matrix.test.ts`);
  return input;
}

// ---------------------------------------------------------------------------------------------
// The dashboard: the same two rules for its pages and forms.

/** Which scopes open each dashboard route (one of them suffices); [] is any signed-in key. */
function dashboardScopes(route: Route): readonly ApiKeyScope[] | undefined {
  const path = route.url.replace(/^\/dashboard/, '') || '/';
  if (route.method === 'POST') {
    const writes: Record<string, readonly ApiKeyScope[]> = {
      '/confirmations/:id/approve': ['approvals'],
      '/confirmations/:id/reject': ['approvals'],
      '/developers/keys': ['keys'],
      '/developers/keys/:id/revoke': ['keys'],
      '/developers/keys/:id/rotate': ['keys'],
      '/developers/webhook-secret/rotate': ['webhooks'],
      '/developers/rails/paystack': ['keys'],
      '/developers/rails/mpesa': ['keys'],
      '/developers/rails/paystack/disconnect': ['keys'],
      '/developers/rails/mpesa/disconnect': ['keys'],
      '/webhooks/events/:id/redeliver': screen('webhooks').scopes,
      '/webhooks/endpoints': screen('webhooks').scopes,
      '/webhooks/endpoints/:id/disable': screen('webhooks').scopes,
      '/webhooks/endpoints/:id/enable': screen('webhooks').scopes,
      '/webhooks/endpoints/:id/delete': screen('webhooks').scopes,
      '/actions/verify': screen('actions').scopes,
      '/sign-out': [],
    };
    return writes[path];
  }
  if (path === '/') return screen('overview').scopes;
  if (path.startsWith('/developers/keys/')) return ['keys'];
  const section = path.split('/')[1]!.replace(/\.csv$/, '') as Section;
  return screen(section)?.scopes;
}

async function dashboardSession(key: string): Promise<{ cookie: string; csrf: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/dashboard/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    payload: new URLSearchParams({ api_key: key }).toString(),
  });
  expect(res.statusCode).toBe(303);
  const header = res.headers['set-cookie'];
  const cookie = /plainpay_session=[^;]+/.exec(Array.isArray(header) ? header.join('\n') : (header ?? ''))![0];
  const row = await runtime.db
    .selectFrom('dashboard_sessions')
    .select('csrf_token')
    .orderBy('created_at', 'desc')
    .where(
      'key_id',
      '=',
      (
        await runtime.db
          .selectFrom('api_keys')
          .select('id')
          .where('secret_hash', '=', hashApiKey(key))
          .executeTakeFirstOrThrow()
      ).id,
    )
    .executeTakeFirstOrThrow();
  return { cookie, csrf: row.csrf_token };
}

function dashboardRequest(route: Route, url: string, session: { cookie: string; csrf: string }) {
  return app.inject({
    method: route.method as 'GET',
    url,
    headers: {
      cookie: session.cookie,
      ...(route.method === 'POST'
        ? { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }
        : {}),
    },
    ...(route.method === 'POST' ? { payload: new URLSearchParams({ csrf_token: session.csrf }).toString() } : {}),
  });
}

describe('the dashboard', () => {
  it('every page and form with an id: another account’s id and the other mode’s id are a 404 page', async () => {
    const routes = listRoutes(app).filter(
      (r) =>
        r.url.startsWith('/dashboard') &&
        r.url.includes(':') &&
        // A reconciliation run belongs to no account: every account opens every run and sees only
        // the lines about its own payments (test/reconciliation.operator.test.ts checks that).
        !r.url.startsWith('/dashboard/reconciliation/'),
    );
    expect(routes.length).toBeGreaterThan(8);
    const sessions = { test: await dashboardSession(a.test.key), live: await dashboardSession(a.live.key) };
    await state.start();
    for (const route of routes) {
      const params = [...route.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
      const kinds = params.map((p) => objectKindOf(route.url, p));
      expect(kinds, `${route.method} ${route.url}: no id kind`).not.toContain(undefined);
      for (const c of foreignCases()) {
        const mode: Mode = c.caller === a.test ? 'test' : 'live';
        const url = fillPath(route.url, idValues({ path: route.url, params }, c.owner));
        const res = await dashboardRequest(route, url, sessions[mode]);
        const where = `${route.method} ${route.url} with ${c.label}: ${res.statusCode}`;
        expect(res.statusCode, where).toBe(404);
        expect(String(res.headers['content-type']), where).toMatch(/^text\/html/);
        for (const id of Object.values(idValues({ path: route.url, params }, c.owner))) {
          // The page may quote the id the user asked for, but nothing of the object.
          expect(res.body.replaceAll(id, ''), where).not.toMatch(/\b(pay|po|conf|evt|run|key|act)_[0-9A-Za-z]{22}\b/);
        }
        expect(await state.check(true), `${where} changed state`).toEqual([]);
      }
    }
  });

  it('every page and form that needs a scope: a key lacking it gets a 403 page and changes nothing', async () => {
    const routes = listRoutes(app).filter((r) => r.url.startsWith('/dashboard') && !/\/(sign-in|assets\/)/.test(r.url));
    const gated: [Route, readonly ApiKeyScope[]][] = [];
    for (const route of routes) {
      const scopes = dashboardScopes(route);
      expect(scopes, `${route.method} ${route.url}: say which scopes open it in dashboardScopes`).toBeDefined();
      if (scopes!.length > 0) gated.push([route, scopes!]);
    }
    expect(gated.length).toBeGreaterThan(15);
    for (const [route, scopes] of gated) {
      const without = API_KEY_SCOPES.filter((s) => !scopes.includes(s));
      const session = await dashboardSession((await issueKey(runtime, a.accountId, false, without)).key);
      await state.start();
      const params = [...route.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
      const url = fillPath(route.url, idValues({ path: route.url, params }, a.test));
      const res = await dashboardRequest(route, url, session);
      const where = `${route.method} ${route.url} without ${scopes.join('/')}: ${res.statusCode}`;
      expect(res.statusCode, where).toBe(403);
      expect(String(res.headers['content-type']), where).toMatch(/^text\/html/);
      expect(await state.check(true), `${where} changed state`).toEqual([]);
    }
  });
});
