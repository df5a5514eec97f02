import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliVerification } from '../src/cli/audit.ts';
import type { CliOutput } from '../src/cli/command.ts';
import { keysList } from '../src/cli/keys.ts';
import { verifyActionLog } from '../src/audit/action-log.ts';
import { bearer, testAccount, testApp, testRuntime, type TestAccount, type TestRuntime } from './support/harness.ts';
import { ADDRESS_A, firstKeyAuth, fund } from './support/money.ts';
import { settledPayment } from './support/tool-tests.ts';

/**
 * One record shape (docs/api.md, "Records and lists"), over every operation the OpenAPI document
 * describes, so that a new endpoint is held to it the day it is added:
 *
 * - every record (an object with an id) says what it is in `object`; every top-level answer is a
 *   record, a list, or one of the few named singletons below;
 * - every list is {"object":"list","data":[…],"has_more":boolean};
 * - every amount is a JSON number in major units, never a string;
 * - the CLI's --json prints what the API answers for the same question.
 *
 * Checked twice: on the document's schemas (every operation, statically), and on live answers of
 * every GET, with the ids it needs made here (a GET with a path parameter this file cannot fill is
 * a failure, not a skip).
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
}
interface Operation {
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** Answers that are neither records nor lists, and why. */
const NOT_RECORDS: Record<string, string> = {
  'GET /v1/ping': 'the seed fixes its fields: ok, account, live',
  'GET /healthz': 'a probe',
  'GET /readyz': 'a probe',
  'POST /keys/{id}/rotate': 'two records: new_key and old_key',
  'POST /v1/confirmations/{confirmation_id}/approve': 'two records: the confirmation and its result',
  'GET /x402/supported':
    "the x402 v2 facilitator interface fixes its fields (kinds, extensions, signers): the ecosystem's clients parse it",
  'POST /x402/verify': 'the x402 v2 facilitator interface fixes its fields (isValid, invalidReason, payer)',
  'POST /x402/settle':
    'the x402 v2 facilitator interface fixes its fields (success, errorReason, payer, transaction, network)',
};

/** A money call the policy held (202): nothing was made yet; confirmation_id names the held action. */
const HELD = 'confirmation_required';

/** Objects of which an account has exactly one (per mode): they say what they are, but have no id. */
const SINGLETONS = new Set([
  'balance',
  'revenue',
  'policy',
  'settlement_schedule',
  'audit_verification',
  'webhook_secret',
]);

/** Fields that hold what someone else wrote (a merchant's metadata, a tool's input): not our shapes. */
const FOREIGN = new Set(['metadata', 'input', 'result', 'error', 'usage', 'heads', 'proposed_actions']);

/** A field that holds money. */
const isAmount = (key: string): boolean =>
  key === 'amount' ||
  key.endsWith('_amount') ||
  [
    'amount_refunded',
    'payment_amount_refunded',
    'refunded',
    'threshold',
    'confirm_above',
    'deny_above',
    'daily_cap',
  ].includes(key);

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;
let doc: Doc;
const ids: Record<string, string> = {};
const created: Record<string, unknown> = {};
const splits = Array.from({ length: 8 }, (_, i) => ({
  to_address: `0x${String(i + 1).repeat(40)}`.slice(0, 42),
  share_parts: 1,
}));

async function call(method: string, url: string, body?: unknown, key = merchant.apiKey) {
  return app.inject({
    method: method as 'GET',
    url,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

async function ok(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await call(method, url, body);
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
  return res.json();
}

beforeAll(async () => {
  runtime = await testRuntime({
    METRICS_TOKEN: 'metrics-token-for-the-route-walk',
    OPERATOR_TOKEN: 'operator-token-for-the-route-walk',
  });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();

  // One of everything the API lists: a settled payment, a refund, a payout, a revenue share of
  // eight legs, a held payout, an agent run and its action, events, a webhook endpoint.
  const actor = { ...(await firstKeyAuth(runtime, merchant.accountId)), channel: 'api' as const };
  await fund(app, merchant.apiKey, 1000);
  ids.payment = await settledPayment(runtime, actor);
  created.refund = await ok('POST', `/v1/payments/${ids.payment}/refunds`, { amount: 10 });
  created.payout = await ok('POST', '/v1/payouts', { amount: 5, to_address: ADDRESS_A });
  ids.payout = (created.payout as { id: string }).id;
  created.share = await ok('POST', '/v1/revenue_shares', { amount: 8, splits });
  created.run = await ok('POST', '/agent/settle', { instruction: `pay out 2 USDC to ${ADDRESS_A}` });
  ids.run = (created.run as { id: string }).id;
  const policy = (await ok('GET', '/v1/policy')).policy as { channels: { api: Record<string, unknown> } };
  policy.channels.api.confirm_above = 1;
  await ok('PUT', '/v1/policy', policy);
  const held = await ok('POST', '/v1/payouts', { amount: 3, to_address: ADDRESS_A });
  ids.confirmation = held.confirmation_id as string;
  ids.endpoint = (
    (await ok('POST', '/v1/webhook_endpoints', { url: 'https://finance.example/hooks', enabled_events: ['*'] })) as {
      id: string;
    }
  ).id;
  ids.action = ((await ok('GET', '/agent/actions')).data as { id: string }[])[0]!.id;
  ids.event = ((await ok('GET', '/v1/events')).data as { id: string }[])[0]!.id;
}, 120_000);

/** The URL of a GET, with its path filled with an object made above (undefined: none known). */
function urlOf(path: string): string | undefined {
  const fill: Record<string, string | undefined> = {
    '/v1/payments/{payment_id}': ids.payment,
    '/checkout/{id}': ids.payment,
    '/v1/payouts/{payout_id}': ids.payout,
    '/v1/confirmations/{confirmation_id}': ids.confirmation,
    '/agent/runs/{id}': ids.run,
    '/agent/actions/{id}': ids.action,
    '/v1/events/{id}': ids.event,
    '/v1/events/{id}/deliveries': ids.event,
    '/v1/webhook_endpoints/{id}': ids.endpoint,
  };
  if (path === '/v1/revenue') {
    const day = 24 * 3600_000;
    const now = runtime.clock.now().getTime();
    return `/v1/revenue?from=${new Date(now - day).toISOString()}&to=${new Date(now + day).toISOString()}`;
  }
  if (!path.includes('{')) return path;
  const id = fill[path];
  return id === undefined ? undefined : path.replace(/\{[a-z_]+\}/, id);
}

/** Every problem with an answer's shape, as "where: what" lines. */
function shapeProblems(value: unknown, where: string, top: boolean): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => shapeProblems(item, `${where}[${i}]`, false));
  if (value === null || typeof value !== 'object') return [];
  const record = value as Record<string, unknown>;
  const problems: string[] = [];
  if (record.object === 'list') {
    if (typeof record.has_more !== 'boolean') problems.push(`${where}: a list without has_more`);
    if (!Array.isArray(record.data)) problems.push(`${where}: a list without data`);
    for (const [i, item] of ((record.data as unknown[]) ?? []).entries()) {
      const entry = item as Record<string, unknown>;
      if (typeof entry?.id !== 'string' || typeof entry.object !== 'string') {
        problems.push(`${where}.data[${i}]: a listed object without id and object`);
      }
    }
  } else if (top && !SINGLETONS.has(record.object as string) && record.object !== HELD) {
    if (typeof record.id !== 'string') problems.push(`${where}: a record without id`);
    if (typeof record.object !== 'string') problems.push(`${where}: a record without object`);
  }
  if ('id' in record && typeof record.object !== 'string') problems.push(`${where}: id without object`);
  for (const [key, field] of Object.entries(record)) {
    if (FOREIGN.has(key) || (record.object === 'event' && key === 'data')) continue;
    if (isAmount(key) && field !== null && typeof field !== 'number') {
      problems.push(`${where}.${key}: an amount that is not a JSON number (${JSON.stringify(field)})`);
    }
    problems.push(...shapeProblems(field, `${where}.${key}`, false));
  }
  return problems;
}

function resolve(schema: Schema): Schema {
  return schema.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]! : schema;
}

/** Every problem with a response schema: the same rules as shapeProblems, on the document. */
function schemaProblems(schema: Schema, where: string, top: boolean, seen = new Set<Schema>()): string[] {
  const s = resolve(schema);
  if (seen.has(s)) return [];
  seen.add(s);
  const problems: string[] = [];
  for (const option of s.anyOf ?? []) problems.push(...schemaProblems(option, where, top, seen));
  if (s.items) problems.push(...schemaProblems(s.items, `${where}[]`, false, seen));
  const props = s.properties;
  if (!props) return problems;
  const kind = props.object?.const;
  const required = new Set(s.required ?? []);
  if (kind === 'list') {
    if (!required.has('has_more')) problems.push(`${where}: a list without has_more`);
    const item = resolve(props.data?.items ?? {});
    if (!item.required?.includes('id') || !item.required.includes('object')) {
      problems.push(`${where}.data[]: listed objects without id and object`);
    }
  } else if (top && !SINGLETONS.has(kind as string) && kind !== HELD) {
    if (!required.has('id') || !required.has('object')) problems.push(`${where}: a record without id and object`);
  }
  if (props.id && !props.object) problems.push(`${where}: id without object`);
  for (const [key, field] of Object.entries(props)) {
    if (FOREIGN.has(key) || (kind === 'event' && key === 'data')) continue;
    const types = [resolve(field).type, ...(field.anyOf ?? []).map((o) => resolve(o).type)].flat();
    if (isAmount(key) && !(types.includes('number') && !types.includes('string'))) {
      problems.push(`${where}.${key}: an amount not documented as a number (${JSON.stringify(types)})`);
    }
    problems.push(...schemaProblems(field, `${where}.${key}`, false, seen));
  }
  return problems;
}

function jsonOperations(): { method: string; path: string; schema: Schema }[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).flatMap(([method, op]) =>
      ['200', '202'].flatMap((status) => {
        const schema = op.responses[status]?.content?.['application/json']?.schema;
        return schema ? [{ method: method.toUpperCase(), path, schema }] : [];
      }),
    ),
  );
}

describe('every operation in the OpenAPI document', () => {
  it('documents records with id and object, lists with has_more, and every amount as a number', () => {
    const operations = jsonOperations();
    expect(operations.length).toBeGreaterThan(40);
    const problems = operations.flatMap(({ method, path, schema }) =>
      NOT_RECORDS[`${method} ${path}`] ? [] : schemaProblems(schema, `${method} ${path}`, true),
    );
    expect(problems).toEqual([]);
  });

  it('answers every GET in that shape, with real objects behind every id', async () => {
    const gets = jsonOperations().filter((op) => op.method === 'GET');
    const unreachable = gets.filter((op) => urlOf(op.path) === undefined).map((op) => op.path);
    expect(unreachable, 'a GET this test cannot fill: add its id to urlOf').toEqual([]);
    const problems: string[] = [];
    for (const { path } of gets) {
      const url = urlOf(path)!;
      const res = await call('GET', url);
      expect(res.statusCode, `GET ${url}: ${res.body}`).toBe(200);
      if (NOT_RECORDS[`GET ${path}`]) continue;
      problems.push(...shapeProblems(res.json(), `GET ${path}`, true));
    }
    expect(problems).toEqual([]);
  });

  it('answers the creates in that shape too', () => {
    const problems = Object.entries(created).flatMap(([what, body]) => shapeProblems(body, what, true));
    expect(problems).toEqual([]);
  });
});

describe('records', () => {
  it('an agent run has id and object, with run_id kept as a deprecated alias of id', async () => {
    const run = await ok('GET', `/agent/runs/${ids.run}`);
    expect(run).toMatchObject({ id: ids.run, object: 'agent_run', run_id: ids.run });
    const actions = run.actions as { id: string; object: string }[];
    expect(actions.length).toBeGreaterThan(0);
    for (const action of actions) expect(action.object).toBe('agent_action');
  });

  it("a revenue share's legs come back in the order given, from the create and from the list", async () => {
    const share = created.share as { id: string; legs: { to_address: string }[] };
    expect(share.legs.map((l) => l.to_address)).toEqual(splits.map((s) => s.to_address));
    const listed = (await ok('GET', '/v1/revenue_shares')).data as (typeof share)[];
    expect(listed.find((s) => s.id === share.id)).toEqual(share);
  });
});

describe('filters', () => {
  it('agent runs by status; an unknown status is a 400 naming it', async () => {
    const run = created.run as { status: string };
    const same = (await ok('GET', `/agent/runs?status=${run.status}`)).data as { id: string; status: string }[];
    expect(same.map((r) => r.id)).toContain(ids.run);
    for (const r of same) expect(r.status).toBe(run.status);
    const other = run.status === 'failed' ? 'completed' : 'failed';
    expect(((await ok('GET', `/agent/runs?status=${other}`)).data as { id: string }[]).map((r) => r.id)).not.toContain(
      ids.run,
    );
    const bad = await call('GET', '/agent/runs?status=done');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.param).toBe('status');
  });

  it('confirmations by status over REST, pending by default; an unknown status is a 400', async () => {
    const listed = async (query: string) =>
      ((await ok('GET', `/v1/confirmations${query}`)).data as { id: string }[]).map((c) => c.id);
    expect(await listed('')).toContain(ids.confirmation);
    expect(await listed('?status=all')).toContain(ids.confirmation);
    expect(await listed('?status=rejected')).not.toContain(ids.confirmation);
    expect((await call('GET', '/v1/confirmations?status=approved')).statusCode).toBe(400);
  });
});

describe('CLI --json prints what the API answers', () => {
  function capture(): { out: CliOutput; lines: string[] } {
    const lines: string[] = [];
    return { out: { stdout: (line) => lines.push(line), stderr: () => {} }, lines };
  }
  const context = () => ({
    db: runtime.db,
    clock: runtime.clock,
    secretBox: runtime.secretBox,
    config: runtime.config,
  });

  it('plainpay keys list --json equals GET /keys (the account has keys of one mode, on one page)', async () => {
    await call('GET', '/keys?limit=100');
    const { out, lines } = capture();
    await keysList.parse(['--account', merchant.accountId, '--json'])(context(), out);
    const api = (await call('GET', '/keys?limit=100')).json();
    expect(JSON.parse(lines[0]!)).toEqual(api);
  });

  it('plainpay audit verify --json is GET /v1/audit/verify, plus accounts_checked and heads', async () => {
    // This file's database holds this one account, so the instance-wide run checks what the API's does.
    const api = (await call('GET', '/v1/audit/verify')).json();
    const cli = cliVerification(await verifyActionLog(runtime.db), runtime.clock.now());
    const {
      accounts_checked,
      heads,
      verified_at: _cliAt,
      money_rows_checked,
      ...rest
    } = JSON.parse(JSON.stringify(cli));
    const { verified_at: _apiAt, money_rows_checked: apiMoneyRows, ...apiRest } = api;
    expect(rest).toEqual(apiRest);
    // The instance's money rows are the account's and the service's own (the treasury's ledger side).
    expect(money_rows_checked).toBeGreaterThanOrEqual(apiMoneyRows);
    expect(accounts_checked).toBe(1);
    expect(Object.keys(heads)).toEqual([merchant.accountId]);
  });
});
