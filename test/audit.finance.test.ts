import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { connectDatabase } from '../src/db/connect.ts';
import type { Db } from '../src/db/database.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import type { Runtime } from '../src/runtime.ts';
import { bearer, testAccount, testApp, type TestAccount } from './support/harness.ts';
import { fund, post } from './support/money.ts';
import { CLI, childEnv, startServer } from './support/server.ts';
import { settlementRuntime, waitUntil } from './support/settlement.ts';

/**
 * What finance reads is what the action log verifies (issue 14, points 1 and 2): one row per
 * action in its final state with what moved, in the API, the CSV and the dashboard; and every
 * column those views show, in every table behind them, is covered by `GET /v1/audit/verify` and
 * `plainpay audit verify`.
 */

const run = promisify(execFile);

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let worker: SettlementWorker;
let merchant: TestAccount;

const SUPPLIER = '0x5555555555555555555555555555555555555555';
const INSTRUCTION = `pay out 5,000 USDC to ${SUPPLIER} for March invoice`;
const APPROVER_NAME = 'Finance, "Ada" Obi';

/** The held agent payout, approved by another key after a failed first attempt, and settled. */
const held = {
  runId: '',
  actionId: '',
  confirmationId: '',
  payoutId: '',
  txHash: '',
  approverKeyId: '',
  approverKey: '',
  merchantKeyId: '',
};

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
  worker = startSettlementWorker(runtime);
  merchant = await testAccount(runtime);
  await fund(app, merchant.apiKey, 100);

  const settled = await post(app, merchant.apiKey, '/agent/settle', { instruction: INSTRUCTION });
  expect(settled.statusCode, settled.body).toBe(200);
  const agentRun = settled.json();
  expect(agentRun.status).toBe('confirmation_required');
  held.runId = agentRun.run_id;
  held.actionId = agentRun.actions[0].id;
  held.confirmationId = agentRun.confirmations[0].id;

  const approver = await issueApiKey(runtime.db, {
    accountId: merchant.accountId,
    livemode: false,
    scopes: ['approvals'],
    name: APPROVER_NAME,
  });
  held.approverKey = approver.secret;
  held.approverKeyId = approver.id;
  held.merchantKeyId = (
    await runtime.db
      .selectFrom('api_keys')
      .select('id')
      .where('account_id', '=', merchant.accountId)
      .where('id', '!=', approver.id)
      .executeTakeFirstOrThrow()
  ).id;

  // The balance is short: the approval fails, and is an attempt of the action, not a row of its own.
  const short = await post(app, approver.secret, `/v1/confirmations/${held.confirmationId}/approve`);
  expect(short.statusCode, short.body).toBe(402);
  await fund(app, merchant.apiKey, 10_000);
  const approved = await post(app, approver.secret, `/v1/confirmations/${held.confirmationId}/approve`);
  expect(approved.statusCode, approved.body).toBe(200);
  held.payoutId = approved.json().result.id;
  await waitUntil('the approved payout to settle', async () => {
    const payout = await runtime.db
      .selectFrom('payouts')
      .select('tx_hash')
      .where('id', '=', held.payoutId)
      .executeTakeFirstOrThrow();
    held.txHash = payout.tx_hash ?? '';
    return payout.tx_hash !== null;
  });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await chain?.close();
});

const CSV_COLUMNS = [
  'id',
  'created',
  'channel',
  'key_id',
  'requested_by',
  'run_id',
  'instruction',
  'tool',
  'amount',
  'asset',
  'recipient',
  'payment_id',
  'memo',
  'decision',
  'decision_reasons',
  'confirmation_id',
  'approved_by_key',
  'decided_by',
  'decided_at',
  'status',
  'object_id',
  'tx_hash',
  'error',
  'leg',
  'leg_id',
  'reference',
  'provider_reference',
  'counterparty',
  'batch_id',
];

function getJson(url: string, key = merchant.apiKey) {
  return app.inject({ method: 'GET', url, headers: bearer(key) });
}

describe('actions that read as money', () => {
  it('the CSV, parsed with a CSV library, has the columns and one row for the approved payout, with its id', async () => {
    const res = await getJson('/agent/actions.csv');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    // A byte order mark, so that a spreadsheet reads it as UTF-8; CRLF line ends.
    expect(res.body.startsWith('\uFEFFid,created,')).toBe(true);
    expect(res.body).toContain('\r\n');
    const records: Record<string, string>[] = parse(res.body, { bom: true, columns: true });
    expect(Object.keys(records[0]!)).toEqual(CSV_COLUMNS);
    const ofRun = records.filter((r) => r.run_id === held.runId);
    // One row for the action, not one more for the failed approval attempt.
    expect(ofRun).toHaveLength(1);
    expect(ofRun[0]).toMatchObject({
      id: held.actionId,
      channel: 'agent',
      key_id: held.merchantKeyId,
      instruction: INSTRUCTION,
      tool: 'create_payout',
      amount: '5000.000000',
      asset: 'USDC',
      recipient: SUPPLIER,
      payment_id: '',
      memo: 'March invoice',
      decision: 'require_confirmation',
      confirmation_id: held.confirmationId,
      approved_by_key: held.approverKeyId,
      status: 'executed',
      object_id: held.payoutId,
      tx_hash: held.txHash,
      error: '',
    });
    expect(ofRun[0]!.requested_by).toMatch(/^sk_test_\w+…\w{4}/);
    expect(ofRun[0]!.decided_by).toMatch(/…\w{4} \(Finance, "Ada" Obi\)$/);
    expect(ofRun[0]!.decision_reasons).toMatch(/^confirm_above: /);
    expect(Date.parse(ofRun[0]!.decided_at!)).not.toBeNaN();
    // Plain cells: no JSON anywhere.
    for (const record of records) for (const cell of Object.values(record)) expect(cell).not.toMatch(/^[[{]/);
  });

  it('GET /agent/actions lists the same row; its detail keeps the failed attempt as a step', async () => {
    const list = (await getJson(`/agent/actions?tool=create_payout&limit=500`)).json();
    const rows = list.data.filter((row: { run_id: string }) => row.run_id === held.runId);
    expect(rows).toHaveLength(1);
    // The API's row: a record (object) whose amount is a JSON number, as every amount the API writes.
    expect(rows[0]).toMatchObject({
      id: held.actionId,
      object: 'agent_action',
      amount: 5000,
      asset: 'USDC',
      recipient: SUPPLIER,
      memo: 'March invoice',
      instruction: INSTRUCTION,
      status: 'executed',
      approved_by_key: held.approverKeyId,
      object_id: held.payoutId,
      tx_hash: held.txHash,
      decision: { outcome: 'require_confirmation' },
    });
    expect(rows[0].decided_by).toContain(APPROVER_NAME);

    const detail = await getJson(`/agent/actions/${held.actionId}`);
    expect(detail.statusCode, detail.body).toBe(200);
    const steps = detail.json().history.map((s: { step: string; key_id: string | null }) => [s.step, s.key_id]);
    expect(steps).toEqual([
      ['Held for approval', held.merchantKeyId],
      ['Approval attempt failed', held.approverKeyId],
      ['Approved and executed', held.approverKeyId],
    ]);
    expect(detail.json().history[1].error).toMatchObject({ code: 'insufficient_funds' });
    // Another account's action is no one's business.
    const other = await testAccount(runtime);
    expect((await getJson(`/agent/actions/${held.actionId}`, other.apiKey)).statusCode).toBe(404);
  });

  it('the dashboard shows the row with amount, recipient, approver and tx hash, its steps, and the verification line', async () => {
    const signIn = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: merchant.apiKey }).toString(),
    });
    const cookie = /plainpay_session=[^;]+/.exec(String(signIn.headers['set-cookie']))![0];
    const page = await app.inject({ method: 'GET', url: '/dashboard/actions', headers: { cookie } });
    const row = new RegExp(`<tr data-action-id="${held.actionId}"[\\s\\S]*?</tr>`).exec(page.body)?.[0] ?? '';
    expect(row).toContain('5,000.00 USDC');
    expect(row).toContain(SUPPLIER);
    expect(row).toContain('March invoice');
    expect(row).toContain('Finance, &quot;Ada&quot; Obi');
    expect(row).toContain(held.payoutId);
    expect(row).toContain(held.txHash);
    expect(page.body).not.toContain('data-status="failed"');

    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.body)![1]!;
    const verify = await app.inject({
      method: 'POST',
      url: '/dashboard/actions/verify',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ csrf_token: csrf }).toString(),
    });
    expect(verify.statusCode).toBe(303);
    const after = await app.inject({ method: 'GET', url: '/dashboard/actions', headers: { cookie } });
    expect(after.body).toMatch(/id="log-verification">Log verified through #\d+ at <time/);

    const detail = await app.inject({ method: 'GET', url: `/dashboard/actions/${held.actionId}`, headers: { cookie } });
    expect(detail.body).toMatch(/<strong>Approval attempt failed<\/strong>/);
    expect(detail.body).toContain(held.txHash);
  });
});

/** A column shown to finance, in one table behind the views, and a value that is not its own. */
interface Edit {
  table: string;
  column: string;
  id: () => string;
  value: () => string | null;
  cast: string;
}

const EDITS: Edit[] = [
  {
    table: 'agent_actions',
    column: 'created_at',
    id: () => held.actionId,
    value: () => '2020-01-01T00:00:00Z',
    cast: 'timestamptz',
  },
  { table: 'agent_actions', column: 'channel', id: () => held.actionId, value: () => 'api', cast: 'text' },
  { table: 'agent_actions', column: 'key_id', id: () => held.actionId, value: () => held.approverKeyId, cast: 'text' },
  { table: 'agent_actions', column: 'run_id', id: () => held.actionId, value: () => null, cast: 'text' },
  { table: 'agent_actions', column: 'tool', id: () => held.actionId, value: () => 'refund_payment', cast: 'text' },
  {
    table: 'agent_actions',
    column: 'input',
    id: () => held.actionId,
    value: () =>
      `{"amount":5000,"asset":"USDC","memo":"March invoice","to_address":"0x9999999999999999999999999999999999999999"}`,
    cast: 'json',
  },
  { table: 'agent_actions', column: 'decision', id: () => held.actionId, value: () => 'allow', cast: 'text' },
  { table: 'agent_actions', column: 'reasons', id: () => held.actionId, value: () => '[]', cast: 'json' },
  { table: 'agent_actions', column: 'status', id: () => held.actionId, value: () => 'failed', cast: 'text' },
  { table: 'agent_actions', column: 'result', id: () => held.actionId, value: () => '{"id":"po_other"}', cast: 'json' },
  { table: 'agent_actions', column: 'error', id: () => held.actionId, value: () => '{"message":"x"}', cast: 'json' },
  { table: 'agent_actions', column: 'confirmation_id', id: () => held.actionId, value: () => null, cast: 'text' },
  {
    table: 'agent_actions',
    column: 'approved_by_key',
    id: () => held.actionId,
    value: () => held.merchantKeyId,
    cast: 'text',
  },
  { table: 'agent_actions', column: 'object_id', id: () => held.actionId, value: () => 'po_forged', cast: 'text' },
  {
    table: 'agent_actions',
    column: 'amount_settlement_minor',
    id: () => held.actionId,
    value: () => '1',
    cast: 'bigint',
  },
  { table: 'confirmations', column: 'status', id: () => held.confirmationId, value: () => 'rejected', cast: 'text' },
  {
    table: 'confirmations',
    column: 'decided_by_key',
    id: () => held.confirmationId,
    value: () => held.merchantKeyId,
    cast: 'text',
  },
  {
    table: 'confirmations',
    column: 'decided_at',
    id: () => held.confirmationId,
    value: () => '2020-01-01T00:00:00Z',
    cast: 'timestamptz',
  },
  {
    table: 'confirmations',
    column: 'expires_at',
    id: () => held.confirmationId,
    value: () => '2099-01-01T00:00:00Z',
    cast: 'timestamptz',
  },
  // What the approval screen shows of the request.
  {
    table: 'confirmations',
    column: 'tool',
    id: () => held.confirmationId,
    value: () => 'refund_payment',
    cast: 'text',
  },
  { table: 'confirmations', column: 'channel', id: () => held.confirmationId, value: () => 'api', cast: 'text' },
  {
    table: 'confirmations',
    column: 'summary',
    id: () => held.confirmationId,
    value: () => 'Pay out 5 USDC',
    cast: 'text',
  },
  {
    table: 'confirmations',
    column: 'input',
    id: () => held.confirmationId,
    value: () =>
      `{"amount":5000,"asset":"USDC","memo":"March invoice","to_address":"0x9999999999999999999999999999999999999999"}`,
    cast: 'json',
  },
  {
    table: 'confirmations',
    column: 'input_hash',
    id: () => held.confirmationId,
    value: () => 'ab'.repeat(32),
    cast: 'text',
  },
  {
    table: 'confirmations',
    column: 'decision',
    id: () => held.confirmationId,
    value: () => '{"outcome":"require_confirmation","reasons":[]}',
    cast: 'json',
  },
  // Without it any approver of the dashboard could decide.
  {
    table: 'confirmations',
    column: 'requested_by_key',
    id: () => held.confirmationId,
    value: () => null,
    cast: 'text',
  },
  { table: 'agent_runs', column: 'instruction', id: () => held.runId, value: () => 'pay out 5 USDC', cast: 'text' },
  { table: 'agent_runs', column: 'reply', id: () => held.runId, value: () => 'Nothing happened.', cast: 'text' },
  { table: 'agent_runs', column: 'status', id: () => held.runId, value: () => 'rejected', cast: 'text' },
  { table: 'api_keys', column: 'name', id: () => held.approverKeyId, value: () => 'CFO', cast: 'text' },
  { table: 'payouts', column: 'tx_hash', id: () => held.payoutId, value: () => `0x${'ab'.repeat(32)}`, cast: 'text' },
];

/** Sets one column of one row, as someone with database rights would; returns the undo. */
async function edit(db: Db, e: Edit): Promise<() => Promise<void>> {
  const id = e.id();
  const where = sql`${sql.table(e.table)} where id = ${id}`;
  const before = await sql<{ v: string | null }>`select ${sql.ref(e.column)}::text as v from ${where}`.execute(db);
  const set = (value: string | null) =>
    sql`update ${sql.table(e.table)} set ${sql.ref(e.column)} = cast(${value} as ${sql.raw(e.cast)}) where id = ${id}`.execute(
      db,
    );
  await set(e.value());
  return async () => {
    await set(before.rows[0]!.v);
  };
}

describe('the log finance reads is the log that is verified', () => {
  it('GET /v1/audit/verify: intact, then each edited column is found and its row named, then intact again', async () => {
    const verify = async () => {
      const res = await getJson('/v1/audit/verify');
      expect(res.statusCode).toBe(200);
      return res.json();
    };
    const intact = await verify();
    expect(intact).toMatchObject({ object: 'audit_verification', ok: true, broken: null });
    expect(intact.actions_checked).toBeGreaterThanOrEqual(1);
    expect(intact.runs_checked).toBeGreaterThanOrEqual(1);
    // A key without the agent scope cannot.
    expect((await getJson('/v1/audit/verify', held.approverKey)).statusCode).toBe(403);

    for (const e of EDITS) {
      const undo = await edit(runtime.db, e);
      try {
        const report = await verify();
        const what = `${e.table}.${e.column}`;
        expect(report.ok, what).toBe(false);
        expect(report.broken, what).toMatchObject({ table: e.table, row_id: e.id() });
        expect(report.broken.columns.join(' '), what).toContain(e.table === 'api_keys' ? 'name' : e.column);
        expect(report.broken.message, what).toContain(`${e.table} row ${e.id()}`);
      } finally {
        await undo();
      }
      expect((await verify()).ok, `after undoing ${e.table}.${e.column}`).toBe(true);
    }
  }, 120_000);
});

describe('plainpay audit verify beside a running serve', () => {
  // PGlite opens in one process only, so nothing can edit the data dir while serve holds it: the
  // edit is made between two runs of serve, and the check runs while the second one is up (the CLI
  // through serve's admin socket, and the HTTP endpoint).
  it('names the edited action row, in the CLI and over HTTP', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-audit-serve-'));
    try {
      const first = await startServer({ PLAINPAY_DATA_DIR: dataDir });
      let actionId: string;
      try {
        const call = (method: string, url: string, body?: unknown) =>
          fetch(`${first.url}${url}`, {
            method,
            headers: { authorization: `Bearer ${first.demoKey}`, 'content-type': 'application/json' },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          });
        expect((await call('POST', '/v1/test_helpers/balance/fund', { amount: 50 })).status).toBe(200);
        expect((await call('POST', '/v1/payouts', { amount: 7, to_address: SUPPLIER })).status).toBe(200);
        const actions = (await (await call('GET', '/agent/actions?tool=create_payout')).json()) as {
          data: { id: string }[];
        };
        actionId = actions.data[0]!.id;
      } finally {
        await first.stop();
      }

      const handle = await connectDatabase({ kind: 'pglite', dataDir: join(dataDir, 'pgdata') });
      await sql`update agent_actions set input = '{"amount":7,"asset":"USDC","to_address":"0x9999999999999999999999999999999999999999"}' where id = ${actionId}`.execute(
        handle.db,
      );
      await handle.close();

      const second = await startServer({ PLAINPAY_DATA_DIR: dataDir });
      try {
        const cli = await run(process.execPath, [CLI, 'audit', 'verify'], { env: childEnv(dataDir) }).catch((e) => e);
        expect(cli.code, cli.stderr).toBe(1);
        expect(cli.stderr).toContain(`agent_actions row ${actionId}`);
        expect(cli.stderr).toContain('input changed since log entry');
        const res = await fetch(`${second.url}/v1/audit/verify`, {
          headers: { authorization: `Bearer ${second.demoKey}` },
        });
        const report = await res.json();
        expect(report).toMatchObject({
          ok: false,
          broken: { table: 'agent_actions', row_id: actionId, columns: ['input'] },
        });
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
