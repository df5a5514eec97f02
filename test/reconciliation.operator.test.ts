// The reconciliation is instance-wide money, the operator's (docs/reconciliation.md, "Who sees
// what"): `plainpay reconcile` and the operator API under OPERATOR_TOKEN run it and show every
// line; neither a merchant's API key nor the metrics token opens it.

import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CliOutput } from '../src/cli/command.ts';
import { runForwardedCommand } from '../src/cli/main.ts';
import { ConfigError, loadConfig } from '../src/config/config.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { afterFile } from './support/after-file.ts';
import {
  bearer,
  extraKey,
  type TestAccount,
  testAccount,
  testApp,
  testRuntime,
  type TestRuntime,
} from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { dayOf } from './support/reconciliation.ts';
import { waitUntil } from './support/settlement.ts';

const OPERATOR_TOKEN = 'operator-token-for-reconciliation-0123456789';
const METRICS_TOKEN = 'metrics-token-for-reconciliation-0123456789';
const RUNS = '/operator/reconciliation/runs';

let runtime: TestRuntime;
let app: FastifyInstance;
let merchant: TestAccount;
let day: string;
let paymentId: string;

beforeAll(async () => {
  runtime = await testRuntime({ OPERATOR_TOKEN, METRICS_TOKEN });
  app = await testApp(runtime);
  const worker = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  afterFile(() => worker.stop());
  merchant = await testAccount(runtime, { name: 'Operator View Shop' });
  const p = await createPayment(app, merchant.apiKey, { amount: 1234, currency: 'NGN' });
  expect((await payPayment(app, merchant.apiKey, p.id)).statusCode).toBe(200);
  await waitUntil('booked', async () => {
    const row = await runtime.db.selectFrom('payments').select('status').where('id', '=', p.id).executeTakeFirst();
    return row?.status === 'settled';
  });
  paymentId = p.id;
  const paid = await runtime.db
    .selectFrom('payments')
    .select('paid_at')
    .where('id', '=', p.id)
    .executeTakeFirstOrThrow();
  day = dayOf(paid.paid_at!);
});

/** `plainpay reconcile …` as it runs inside serve (the admin socket's path), its output kept. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const out: CliOutput = { stdout: (l) => stdout.push(l), stderr: (l) => stderr.push(l) };
  const context = {
    db: runtime.db,
    secretBox: runtime.secretBox,
    clock: runtime.clock,
    config: runtime.config,
    runtime: async () => runtime,
  };
  const code = await runForwardedCommand(['reconcile', ...args], context, out);
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

/** Makes the day's payment look credited without an operator's collection: a line about that merchant's payment. */
async function withDifference<T>(run: () => Promise<T>): Promise<T> {
  const attempt = await runtime.db
    .selectFrom('payment_attempts')
    .select('id')
    .where('payment_id', '=', paymentId)
    .executeTakeFirstOrThrow();
  const setOutcome = (outcome: 'succeeded' | 'flagged') =>
    runtime.db.updateTable('payment_attempts').set({ outcome }).where('id', '=', attempt.id).execute();
  await setOutcome('flagged');
  try {
    return await run();
  } finally {
    await setOutcome('succeeded');
  }
}

describe('plainpay reconcile', () => {
  it('runs the day, stores the run and prints it; exit 0 on a clean day', async () => {
    const { code, stdout } = await cli(['--date', day]);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^Reconciliation of ${day} \\(rec_\\w+, cli\\): completed, 0 difference\\(s\\)`));
    expect(stdout).toContain('test NGN sandbox');
    const stored = await runtime.db.selectFrom('reconciliation_runs').selectAll().where('day', '=', day).execute();
    expect(stored.some((r) => r.trigger === 'cli' && r.status === 'completed')).toBe(true);
  });

  it('exits 1 naming each difference; --json and --csv print the same lines', async () => {
    await withDifference(async () => {
      const text = await cli(['--date', day]);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain(`credit_without_operator_collection test NGN ${paymentId}`);

      const json = await cli(['--date', day, '--json']);
      expect(json.code).toBe(1);
      const run = JSON.parse(json.stdout);
      expect(run).toMatchObject({
        object: 'reconciliation_run',
        day,
        trigger: 'cli',
        status: 'completed',
        differences: 1,
      });
      expect(run.lines).toEqual([
        expect.objectContaining({
          line: 1,
          kind: 'credit_without_operator_collection',
          account: merchant.accountId,
          payment: paymentId,
          ledger_amount_minor: '123400',
        }),
      ]);

      const csv = await cli(['--date', day, '--csv']);
      const rows = parse(csv.stdout, { columns: true, bom: true }) as Array<Record<string, string>>;
      expect(rows).toEqual([
        expect.objectContaining({
          day,
          line: '1',
          kind: 'credit_without_operator_collection',
          payment: paymentId,
          ledger_amount: '1234.00',
        }),
      ]);
    });
  });

  it('refuses a malformed date and two output formats as usage errors, before running anything', async () => {
    expect((await cli(['--date', '2026-02-30'])).code).toBe(2);
    expect((await cli(['--date', day, '--json', '--csv'])).code).toBe(2);
    expect(JSON.parse((await cli(['--date', 'yesterday', '--json'])).stderr).error.param).toBe('date');
  });
});

describe('the operator API', () => {
  it("is the operator token holder's only: not a merchant key, not the metrics token", async () => {
    for (const headers of [{}, bearer(merchant.apiKey), bearer(METRICS_TOKEN)]) {
      const res = await app.inject({ method: 'GET', url: RUNS, headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.type).toBe('authentication_error');
    }
    const post = await app.inject({ method: 'POST', url: RUNS, headers: bearer(merchant.apiKey), payload: {} });
    expect(post.statusCode).toBe(401);
  });

  it('takes a token of its own: the metrics token cannot be the operator token too', () => {
    expect(() => loadConfig({ METRICS_TOKEN, OPERATOR_TOKEN: METRICS_TOKEN })).toThrow(ConfigError);
    expect(loadConfig({ METRICS_TOKEN, OPERATOR_TOKEN }).operatorToken).toBe(OPERATOR_TOKEN);
  });

  it('does not exist without OPERATOR_TOKEN', async () => {
    const without = await testApp(await testRuntime());
    expect((await without.inject({ method: 'GET', url: RUNS, headers: bearer(OPERATOR_TOKEN) })).statusCode).toBe(404);
  });

  it('runs a day on demand, shows the run with its lines, lists the history and exports the lines as CSV', async () => {
    await withDifference(async () => {
      const ran = await app.inject({
        method: 'POST',
        url: RUNS,
        headers: { ...bearer(OPERATOR_TOKEN), 'content-type': 'application/json' },
        payload: JSON.stringify({ date: day }),
      });
      expect(ran.statusCode).toBe(200);
      const run = ran.json();
      expect(run).toMatchObject({ object: 'reconciliation_run', day, trigger: 'api', differences: 1 });
      expect(run.summary.collections).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ currency: 'NGN', livemode: false, ledger_count: 1, ledger_amount_minor: '123400' }),
        ]),
      );

      const shown = await app.inject({ method: 'GET', url: `${RUNS}/${run.id}`, headers: bearer(OPERATOR_TOKEN) });
      expect(shown.json()).toEqual(run);

      const history = await app.inject({ method: 'GET', url: `${RUNS}?limit=5`, headers: bearer(OPERATOR_TOKEN) });
      expect(history.json().data[0]).toMatchObject({ id: run.id, differences: 1 });
      expect(history.json().data[0].lines).toBeUndefined();

      const csv = await app.inject({
        method: 'GET',
        url: `${RUNS}/${run.id}/lines.csv`,
        headers: bearer(OPERATOR_TOKEN),
      });
      expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(parse(csv.body, { columns: true, bom: true })).toEqual([
        expect.objectContaining({ run: run.id, kind: 'credit_without_operator_collection', payment: paymentId }),
      ]);
    });
  });

  it('answers a malformed date and an unknown run with the error object', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: RUNS,
      headers: { ...bearer(OPERATOR_TOKEN), 'content-type': 'application/json' },
      payload: JSON.stringify({ date: '14/03/2026' }),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.param).toBe('date');
    const missing = await app.inject({ method: 'GET', url: `${RUNS}/rec_nothere`, headers: bearer(OPERATOR_TOKEN) });
    expect(missing.statusCode).toBe(404);
  });
});

describe("a merchant's finance on the dashboard", () => {
  /** Signs in with an API key, as the sign-in form does; the session cookie. */
  async function signIn(apiKey: string): Promise<string> {
    const res = await app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: new URLSearchParams({ api_key: apiKey }).toString(),
    });
    return /plainpay_session=[^;]+/.exec(String(res.headers['set-cookie']))![0];
  }

  it('sees the lines about its own payments, and nothing of another merchant or the operator', async () => {
    const run = await withDifference(() => cli(['--date', day, '--json'])).then((r) => JSON.parse(r.stdout));
    const mine = await signIn(merchant.apiKey);
    const list = await app.inject({ method: 'GET', url: '/dashboard/reconciliation', headers: { cookie: mine } });
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(`data-run-id="${run.id}"`);
    const page = await app.inject({
      method: 'GET',
      url: `/dashboard/reconciliation/${run.id}`,
      headers: { cookie: mine },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-kind="credit_without_operator_collection"');
    expect(page.body).toContain(`data-payment-id="${paymentId}"`);
    const csv = await app.inject({
      method: 'GET',
      url: `/dashboard/reconciliation/${run.id}/lines.csv`,
      headers: { cookie: mine },
    });
    expect(parse(csv.body, { columns: true, bom: true })).toEqual([
      expect.objectContaining({ kind: 'credit_without_operator_collection', payment: paymentId }),
    ]);

    const other = await testAccount(runtime, { name: 'Another Shop' });
    const theirs = await signIn(other.apiKey);
    const otherPage = await app.inject({
      method: 'GET',
      url: `/dashboard/reconciliation/${run.id}`,
      headers: { cookie: theirs },
    });
    expect(otherPage.statusCode).toBe(200);
    expect(otherPage.body).not.toContain(paymentId);
    expect(otherPage.body).toContain('everything matched');
    const otherCsv = await app.inject({
      method: 'GET',
      url: `/dashboard/reconciliation/${run.id}/lines.csv`,
      headers: { cookie: theirs },
    });
    expect(parse(otherCsv.body, { columns: true, bom: true })).toEqual([]);
  });

  it('needs the payments:read scope', async () => {
    const key = await extraKey(runtime, merchant.accountId, { scopes: ['webhooks'] });
    const res = await app.inject({
      method: 'GET',
      url: '/dashboard/reconciliation',
      headers: { cookie: await signIn(key) },
    });
    expect(res.statusCode).toBe(403);
  });
});
