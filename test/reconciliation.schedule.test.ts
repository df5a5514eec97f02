// The reconciliation's runs (docs/reconciliation.md): the daily scheduled run, once however many
// workers ask; the history each run leaves; and the alert a treasury shortfall raises, as an error
// line and in /metrics.

import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChainConnection } from '../src/chain/chain.ts';
import { listRunLines } from '../src/db/repositories/reconciliation-runs.ts';
import { reconcileYesterdayIfDue } from '../src/reconciliation/job.ts';
import { runReconciliation, runScheduledReconciliation } from '../src/reconciliation/runs.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { afterFile } from './support/after-file.ts';
import { bearer, testAccount, testApp, testRuntime, type TestRuntime } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { capturingLogger, dayOf, drainTreasury, refillTreasury } from './support/reconciliation.ts';
import { waitUntil } from './support/settlement.ts';

const METRICS_TOKEN = 'reconciliation-metrics-token-0123456789';

let runtime: TestRuntime;
let app: FastifyInstance;
let log: ReturnType<typeof capturingLogger>;

beforeAll(async () => {
  log = capturingLogger();
  runtime = await testRuntime({ METRICS_TOKEN }, { logger: log.logger });
  app = await testApp(runtime);
  const worker = startSettlementWorker(runtime, { pollIntervalMs: 20 });
  afterFile(() => worker.stop());
});

/** A value of the latest /metrics scrape, by name and labels (exactly as written). */
async function metric(name: string, labels = ''): Promise<number> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
  expect(res.statusCode).toBe(200);
  const found = res.body.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  if (!found) throw new Error(`no ${name}${labels} in the scrape`);
  return Number(found.split(' ')[1]);
}

describe('the daily scheduled run', () => {
  it('runs the day before once, however many workers ask at once, and leaves it done', async () => {
    const runs = await Promise.all([1, 2, 3].map(() => reconcileYesterdayIfDue(runtime)));
    const ran = runs.filter((r) => r !== undefined);
    expect(ran).toHaveLength(1);
    expect(ran[0]).toMatchObject({ trigger: 'schedule', status: 'completed', differences: 0 });
    const day = ran[0]!.day;
    expect(new Date(`${day}T00:00:00Z`).getTime()).toBeLessThan(runtime.clock.now().getTime() - 86_400_000);
    expect(await reconcileYesterdayIfDue(runtime)).toBeUndefined();
    const stored = await runtime.db.selectFrom('reconciliation_runs').selectAll().where('day', '=', day).execute();
    expect(stored).toHaveLength(1);
  });

  it('a scheduled run whose worker died is taken up by another once its lease has passed', async () => {
    const day = dayOf(new Date(runtime.clock.now().getTime() - 5 * 86_400_000));
    // A worker claimed it and died before finishing: the row is running, its lease is still good.
    await runtime.db
      .insertInto('reconciliation_runs')
      .values({
        id: 'rec_DiedMidRun00000000000',
        day,
        trigger: 'schedule',
        status: 'running',
        claimed_by: 'a-worker-that-died',
        lease_until: new Date(runtime.clock.now().getTime() + 60_000),
        started_at: runtime.clock.now(),
      })
      .execute();
    expect(await runScheduledReconciliation(runtime, day)).toBeUndefined();
    runtime.clock.advance(61_000);
    const taken = await runScheduledReconciliation(runtime, day);
    expect(taken).toMatchObject({ id: 'rec_DiedMidRun00000000000', status: 'completed' });
    expect(taken!.claimed_by).not.toBe('a-worker-that-died');
  });
});

describe('the treasury shortfall alert', () => {
  it('a covered treasury reports no difference; a short one is named, logged at error and counted in /metrics', async () => {
    const merchant = await testAccount(runtime, { name: 'Cover Shop' });
    const p = await createPayment(app, merchant.apiKey, { amount: 50_000, currency: 'NGN' });
    expect((await payPayment(app, merchant.apiKey, p.id)).statusCode).toBe(200);
    // No payout address: settled into the custodial balance, which the treasury owes.
    await waitUntil('settled into the balance', async () => {
      const row = await runtime.db.selectFrom('payments').select('status').where('id', '=', p.id).executeTakeFirst();
      return row?.status === 'settled';
    });
    const paid = await runtime.db.selectFrom('payments').selectAll().where('id', '=', p.id).executeTakeFirstOrThrow();
    const day = dayOf(paid.paid_at!);

    const covered = await runReconciliation(runtime, { day, trigger: 'cli' });
    expect(covered).toMatchObject({ status: 'completed', differences: 0, treasury_shortfall_minor: 0n });
    expect(await metric('plainpay_reconciliation_differences', '{kind="treasury_shortfall",mode="both"}')).toBe(0);
    expect(await metric('plainpay_treasury_cover_ratio')).toBeGreaterThan(1);

    const conn: ChainConnection = await runtime.chain();
    const taken = await drainTreasury(conn, paid.settlement_minor - 1n);
    try {
      const short = await runReconciliation(runtime, { day, trigger: 'cli' });
      const lines = await listRunLines(runtime.db, short.id);
      expect(lines.filter((l) => l.kind === 'treasury_shortfall')).toEqual([
        expect.objectContaining({
          livemode: null,
          currency: 'USDC',
          account_id: null,
          source_amount_minor: paid.settlement_minor - 1n,
        }),
      ]);
      // The ledger still books the tokens taken out: ledger and chain disagree, and that is a line too.
      expect(lines.some((l) => l.kind === 'treasury_ledger_differs')).toBe(true);
      expect(short.treasury_shortfall_minor).toBeGreaterThan(0n);

      const alert = log.lines.find((l) => l.level === 50 && String(l.msg).includes('treasury holds less than it owes'));
      expect(alert).toMatchObject({ day, run: short.id, shortfallMinor: short.treasury_shortfall_minor!.toString() });
      expect(
        log.lines.some((l) => l.level === 50 && l.run === short.id && String(l.msg).includes('treasury_shortfall')),
      ).toBe(true);
      expect(await metric('plainpay_reconciliation_differences', '{kind="treasury_shortfall",mode="both"}')).toBe(1);
      expect(await metric('plainpay_treasury_cover_ratio')).toBeLessThan(1);
      expect(await metric('plainpay_treasury_shortfall_usdc')).toBeGreaterThan(0);
      expect(await metric('plainpay_reconciliation_day_timestamp_seconds')).toBe(Date.parse(`${day}T00:00:00Z`) / 1000);
    } finally {
      await refillTreasury(conn, taken);
    }
  });
});
