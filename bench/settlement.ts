// Settlement gas benchmark (acceptance 2): 500 paid payments to 20 addresses are settled by the real
// worker on the embedded devnet, in batches with netting; the gas the service paid per settled
// payment is compared with one plain ERC-20 transfer measured on the same chain in the same run.
// Then a trickle (issue 15): 10 payments/s, each to one of 20 addresses at random, settled on the
// `instant` schedule with a fixed 200 ms window (the old planner, for the same-run comparison) and
// with the adaptive window, and on the `hourly` schedule. The hourly window is shortened
// (SETTLEMENT_HOUR_MS) so that the run ends; see HOUR_MS for why the figure stays representative.
// Everything is embedded and temporary (a fresh PGlite in a temp dir, an in-process devnet).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccount } from '../src/accounts/create-account.ts';
import { connectChain, readTokenBalance } from '../src/chain/chain.ts';
import { measureGas } from '../src/chain/gas.ts';
import { freshAddresses } from '../src/chain/testing.ts';
import { loadConfig } from '../src/config/config.ts';
import { createLogger } from '../src/core/logger.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { defaultSettlementOptions } from '../src/settlement/context.ts';
import { checkSettlementInvariants } from '../src/settlement/invariants.ts';
import { saveSettlementSchedule } from '../src/db/repositories/settlement-schedules.ts';
import { type SettlementWorkerOptions, startSettlementWorker } from '../src/settlement/worker.ts';
import { createPaidPayments, expectedByAddress, spreadOver } from '../test/support/settlement-fixtures.ts';
import type { BenchResult } from './run.ts';

const PAYMENTS = 500;
/** Single payments timed paid → settled after the backlog, one at a time. */
const LATENCY_SAMPLES = 20;
/** docs/settlement.md: paid → settled p95 ≤ 2 s on the instant schedule. */
const LATENCY_P95_MS = 2_000;
const ADDRESSES = 20;
/** Acceptance 2: total gas per settled payment below 15% of one plain ERC-20 transfer. */
const LIMIT = 0.15;
/** Issue 15: the trickle, 10 payments/s over 20 addresses, for this long per run. */
const TRICKLE_PER_SECOND = 10;
const TRICKLE_MS = 15_000;
/** Issue 15 targets at the trickle, per payment, × one ERC-20 transfer to a fresh address. */
const INSTANT_LIMIT = 0.35;
const HOURLY_LIMIT = 0.01;
/**
 * The hourly window in this run. A window's gas depends on its lines (one per address owed), not on
 * how many payments it nets: the batch call pays each address once. So one shortened window with
 * all 20 addresses costs what a real hour's does per batch, and a real hour at 10 payments/s (36 000
 * payments) needs ceil(36 000 / batchMaxTransfers) such batches; the hourly figure is that, per
 * payment. The window measured here must reach all 20 addresses (checked).
 */
const HOUR_MS = 16_000;
const REAL_HOUR_PAYMENTS = TRICKLE_PER_SECOND * 3600;

export async function settlementBench(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'plainpay-bench-'));
  const database = await connectDatabase({ kind: 'pglite', dataDir: join(dir, 'pgdata') });
  const chain = await connectChain({ confirmations: 1 });
  try {
    await migrateToLatest(database.db);
    // The yardstick first, on the same chain: a plain transfer to a fresh address and to a holder.
    const gas = await measureGas(chain, { recipients: ADDRESSES });

    const config = loadConfig({
      PLAINPAY_DATA_DIR: dir,
      PLAINPAY_MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
      DEMO_ACCOUNT: '0',
      SETTLEMENT_HOUR_MS: String(HOUR_MS),
    });
    const runtime = await createRuntime(config, {
      database,
      migrate: false,
      chain,
      logger: createLogger(process.env.BENCH_LOG ?? 'silent'),
    });
    const merchant = await createAccount(runtime.db, runtime.secretBox, { name: 'Bench merchant', livemode: false });
    const addresses = freshAddresses(`bench-${randomBytes(4).toString('hex')}`, ADDRESSES);

    const created = performance.now();
    const payments = await createPaidPayments(runtime, merchant.account, spreadOver(addresses, PAYMENTS));
    const createdMs = performance.now() - created;

    const started = performance.now();
    const worker = startSettlementWorker(runtime);
    for (;;) {
      const open = await runtime.db
        .selectFrom('payments')
        .select('id')
        .where('account_id', '=', merchant.account)
        .where('status', '!=', 'settled')
        .limit(1)
        .execute();
      if (open.length === 0) break;
      if (performance.now() - started > 120_000) throw new Error('settlement did not finish within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const settleMs = performance.now() - started;

    // Every batch the service sent (confirmed or not) counts: the gas was paid either way.
    const batches = await runtime.db
      .selectFrom('settlement_batches')
      .select(['status', 'gas_used', 'tx_hash', 'transfer_count', 'lines'])
      .where('tx_hash', 'is not', null)
      .execute();
    let totalGas = 0n;
    for (const b of batches) {
      const receipt = await chain.publicClient.getTransactionReceipt({ hash: b.tx_hash as `0x${string}` });
      if (receipt.gasUsed !== b.gas_used) throw new Error(`batch gas ${b.gas_used} != receipt ${receipt.gasUsed}`);
      totalGas += receipt.gasUsed;
    }
    const settledPayments = await runtime.db
      .selectFrom('payments')
      .select(['settlement_gas_used'])
      .where('account_id', '=', merchant.account)
      .execute();
    const attributed = settledPayments.reduce((s, p) => s + (p.settlement_gas_used ?? 0n), 0n);

    let balancesOk = true;
    for (const [address, sum] of expectedByAddress(payments)) {
      if ((await readTokenBalance(chain, address as `0x${string}`)) !== sum) balancesOk = false;
    }
    // Latency at rest (docs/settlement.md, "instant": paid → settled p95 ≤ 2 s): one payment at a time,
    // timed from the moment it is paid to the moment its status reads settled. Measured here, in
    // the benchmark, not asserted in a test: a loaded machine makes any millisecond bound in a test
    // fail for no fault of the code.
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const paidAt = performance.now();
      const [one] = await createPaidPayments(runtime, merchant.account, spreadOver(addresses, 1));
      for (;;) {
        const row = await runtime.db
          .selectFrom('payments')
          .select('status')
          .where('id', '=', one!.id)
          .executeTakeFirstOrThrow();
        if (row.status === 'settled') break;
        if (performance.now() - paidAt > 60_000) throw new Error('a single payment did not settle within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      latencies.push(performance.now() - paidAt);
    }
    latencies.sort((a, b) => a - b);
    const p95 = latencies[Math.ceil(latencies.length * 0.95) - 1]!;

    await worker.stop();

    // The trickle: the old fixed 200 ms window, the adaptive window, and the hourly schedule.
    const fixed = await trickle(runtime, merchant.account, addresses, {
      batchMaxWaitMs: config.settlement.batchWindowMs,
    });
    const adaptive = await trickle(runtime, merchant.account, addresses, {});
    const hourlyMerchant = await createAccount(runtime.db, runtime.secretBox, { name: 'Hourly', livemode: false });
    await saveSettlementSchedule(
      runtime.db,
      { accountId: hourlyMerchant.account, livemode: false },
      { schedule: 'hourly', thresholdMinor: null },
      null,
      new Date(),
    );
    // Start just after a window boundary and stop before the next, so the trickle is one window.
    await sleepMs(HOUR_MS - (Date.now() % HOUR_MS) + 300);
    const hourly = await trickle(
      runtime,
      hourlyMerchant.account,
      addresses,
      {},
      HOUR_MS - 4_000,
      Date.now() + HOUR_MS - 1_500,
    );
    const batchesPerRealHour = Math.ceil(REAL_HOUR_PAYMENTS / defaultSettlementOptions(config).batchMaxTransfers);
    const hourlyPerPayment = hourly.batches === 1 ? (hourly.gas * batchesPerRealHour) / REAL_HOUR_PAYMENTS : Number.NaN;

    const invariants = await checkSettlementInvariants(runtime, chain);
    await runtime.close();

    const perPayment = Number(totalGas) / PAYMENTS;
    const fresh = Number(gas.erc20TransferToFresh);
    const existing = Number(gas.erc20TransferToExisting);
    const lines = batches.reduce((s, b) => s + (b.lines as unknown[]).length, 0);
    return {
      title: `settlement: ${PAYMENTS} paid payments to ${ADDRESSES} addresses, batch max ${config.settlement.batchMax}, window ${config.settlement.batchWindowMs} ms, embedded devnet`,
      baseline: { label: 'ERC-20 transfer (fresh)', value: fresh, unit: 'gas' },
      rows: [
        { label: 'ERC-20 transfer (existing holder)', value: existing, unit: 'gas', ratio: true },
        { label: `settlement, all ${batches.length} batches`, value: Number(totalGas), unit: 'gas', ratio: true },
        { label: 'settlement, per settled payment', value: perPayment, unit: 'gas', ratio: true },
        { label: 'trickle, instant, fixed 200 ms window (before)', value: fixed.perPayment, unit: 'gas', ratio: true },
        { label: 'trickle, instant, adaptive window', value: adaptive.perPayment, unit: 'gas', ratio: true },
        { label: 'trickle, hourly, one hour at 10/s', value: hourlyPerPayment, unit: 'gas', ratio: true },
      ],
      notes: [
        `batches: ${batches.length}, ${lines} netted lines for ${PAYMENTS} payments; gas attributed to payments: ${attributed} (= total: ${attributed === totalGas})`,
        `time: created+paid ${Math.round(createdMs)} ms; settled in ${Math.round(settleMs)} ms (${Math.round((PAYMENTS * 1000) / settleMs)} payments/s)`,
        `single payment, paid → settled over ${LATENCY_SAMPLES}: median ${Math.round(latencies[Math.floor(latencies.length / 2)]!)} ms, p95 ${Math.round(p95)} ms, max ${Math.round(latencies.at(-1)!)} ms`,
        ...[fixed, adaptive].map(
          (t, i) =>
            `trickle ${i === 0 ? 'fixed 200 ms' : 'adaptive'}: ${t.payments} payments in ${t.batches} batches, ${t.lines} lines; paid → settled median ${t.p50} ms, p95 ${t.p95} ms (p95 per step, ms: ${JSON.stringify(t.stages)}); existing-holder ratio ${(t.perPayment / existing).toFixed(3)}`,
        ),
        `trickle hourly (window shortened to ${HOUR_MS / 1000} s): ${hourly.payments} payments in ${hourly.windows} window(s), ${hourly.batches} batch(es) of ${hourly.lines} lines, ${hourly.gas} gas (${Math.round(hourly.perPayment)} per payment in this window); a real hour at 10/s is ${REAL_HOUR_PAYMENTS} payments in ${batchesPerRealHour} such batches: ${hourlyPerPayment.toFixed(1)} gas per payment (existing-holder ratio ${(hourlyPerPayment / existing).toFixed(4)})`,
        `invariants: ${invariants.ok ? 'ok' : invariants.problems.join('; ')} (treasury ledger = chain = ${invariants.treasury.chain})`,
      ],
      checks: [
        {
          label: `gas per settled payment < ${LIMIT * 100}% of a plain ERC-20 transfer (fresh: ${((perPayment / fresh) * 100).toFixed(1)}%, existing holder: ${((perPayment / existing) * 100).toFixed(1)}%)`,
          pass: perPayment < LIMIT * existing && perPayment < LIMIT * fresh,
        },
        { label: `paid → settled p95 ≤ ${LATENCY_P95_MS} ms (${Math.round(p95)} ms)`, pass: p95 <= LATENCY_P95_MS },
        { label: 'every address received exactly its payments', pass: balancesOk },
        {
          label: `trickle instant: gas per payment ≤ ${INSTANT_LIMIT}× an ERC-20 transfer (${(adaptive.perPayment / fresh).toFixed(3)}×; fixed 200 ms window: ${(fixed.perPayment / fresh).toFixed(3)}×)`,
          pass: adaptive.perPayment <= INSTANT_LIMIT * fresh,
        },
        {
          label: `trickle instant: paid → settled p95 ≤ ${LATENCY_P95_MS} ms (${adaptive.p95} ms)`,
          pass: adaptive.p95 <= LATENCY_P95_MS,
        },
        {
          label: `trickle hourly: gas per payment ≤ ${HOURLY_LIMIT}× an ERC-20 transfer (${(hourlyPerPayment / fresh).toFixed(4)}×), one window, one line per address (${hourly.lines} lines for ${ADDRESSES} addresses)`,
          pass: hourlyPerPayment <= HOURLY_LIMIT * fresh && hourly.lines === ADDRESSES,
        },
        { label: 'ledger and settlement invariants hold', pass: invariants.ok },
        { label: 'per-payment gas shares add up to the gas paid', pass: attributed === totalGas },
      ],
    };
  } finally {
    await chain.close();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface TrickleResult {
  payments: number;
  batches: number;
  lines: number;
  gas: number;
  perPayment: number;
  p50: number;
  p95: number;
  stages: Record<'intake' | 'window' | 'send' | 'confirm', number>;
  /** Distinct due times (hourly: windows; instant: 1). */
  windows: number;
}

/**
 * Pays TRICKLE_PER_SECOND payments a second for `durationMs`, each to one of `addresses` at random
 * (seeded: the same sequence every run), with a worker of `options` running; waits until all are
 * settled and returns the gas of the batches that carried them and paid → settled latencies.
 */
async function trickle(
  runtime: Runtime,
  accountId: string,
  addresses: readonly string[],
  options: SettlementWorkerOptions,
  durationMs = TRICKLE_MS,
  /** Stop paying at this time even if the trickle fell behind (a loaded machine): one hourly window. */
  until = Number.POSITIVE_INFINITY,
): Promise<TrickleResult> {
  const worker = startSettlementWorker(runtime, options);
  // mulberry32: the same uniform sequence every run (an LCG's low bits would cycle over a few addresses).
  let seed = 15;
  const pick = (): string => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return addresses[((t ^ (t >>> 14)) >>> 0) % addresses.length]!;
  };
  const count = Math.floor((durationMs / 1000) * TRICKLE_PER_SECOND);
  const started = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < count && Date.now() < until; i++) {
    await sleepMs(started + (i * 1000) / TRICKLE_PER_SECOND - Date.now());
    const [spec] = spreadOver([pick()], 1);
    const [paid] = await createPaidPayments(runtime, accountId, [spec!]);
    ids.push(paid!.id);
  }
  for (;;) {
    const open = await runtime.db
      .selectFrom('payments')
      .select('id')
      .where('id', 'in', ids)
      .where('status', '!=', 'settled')
      .limit(1)
      .execute();
    if (open.length === 0) break;
    if (Date.now() - started > durationMs + 120_000) throw new Error('the trickle did not settle within 120 s');
    await sleepMs(50);
  }
  await worker.stop();
  const rows = await runtime.db
    .selectFrom('payments as p')
    .innerJoin('transfers as t', (join) =>
      join.onRef('t.source_id', '=', 'p.id').on('t.kind', '=', 'payment_settlement'),
    )
    .innerJoin('settlement_batches as b', 'b.id', 't.batch_id')
    .select([
      'p.paid_at',
      'p.settled_at',
      't.due_at',
      't.created_at as queued_at',
      'b.created_at as planned_at',
      'b.sent_at',
    ])
    .where('p.id', 'in', ids)
    .execute();
  const latencies = rows.map((r) => r.settled_at!.getTime() - r.paid_at!.getTime()).sort((a, b) => a - b);
  // Where the time goes, p95 of each step: paid → taken (intake), → planned (the window), → sent, → settled.
  const p95Of = (values: number[]): number => values.sort((a, b) => a - b)[Math.ceil(values.length * 0.95) - 1]!;
  const stages = {
    intake: p95Of(rows.map((r) => r.queued_at.getTime() - r.paid_at!.getTime())),
    window: p95Of(rows.map((r) => r.planned_at.getTime() - r.queued_at.getTime())),
    send: p95Of(rows.map((r) => (r.sent_at?.getTime() ?? Number.NaN) - r.planned_at.getTime())),
    confirm: p95Of(rows.map((r) => r.settled_at!.getTime() - (r.sent_at?.getTime() ?? Number.NaN))),
  };
  const batches = await runtime.db
    .selectFrom('settlement_batches as b')
    .select(['b.id', 'b.gas_used', 'b.lines'])
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('transfers as t').select('t.id').whereRef('t.batch_id', '=', 'b.id').where('t.source_id', 'in', ids),
      ),
    )
    .where('b.tx_hash', 'is not', null)
    .execute();
  const gas = batches.reduce((sum, b) => sum + Number(b.gas_used), 0);
  return {
    payments: ids.length,
    batches: batches.length,
    lines: batches.reduce((sum, b) => sum + (b.lines as unknown[]).length, 0),
    gas,
    perPayment: gas / ids.length,
    p50: latencies[Math.floor(latencies.length / 2)]!,
    p95: latencies[Math.ceil(latencies.length * 0.95) - 1]!,
    stages,
    windows: new Set(rows.map((r) => r.due_at?.getTime())).size,
  };
}
