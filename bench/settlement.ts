// Settlement gas benchmark (acceptance 2): 500 paid payments to 20 addresses are settled by the real
// worker on the embedded devnet, in batches with netting; the gas the service paid per settled
// payment is compared with one plain ERC-20 transfer measured on the same chain in the same run.
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
import { createRuntime } from '../src/runtime.ts';
import { checkSettlementInvariants } from '../src/settlement/invariants.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { createPaidPayments, expectedByAddress, spreadOver } from '../test/support/settlement-fixtures.ts';
import type { BenchResult } from './run.ts';

const PAYMENTS = 500;
/** Single payments timed paid → settled after the backlog, one at a time. */
const LATENCY_SAMPLES = 20;
/** DESIGN.md §7: paid → settled p95 ≤ 2 s on the instant schedule. */
const LATENCY_P95_MS = 2_000;
const ADDRESSES = 20;
/** Acceptance 2: total gas per settled payment below 15% of one plain ERC-20 transfer. */
const LIMIT = 0.15;

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
    // Latency at rest (DESIGN.md §7, "instant": paid → settled p95 ≤ 2 s): one payment at a time,
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
    const invariants = await checkSettlementInvariants(runtime.db, chain);
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
      ],
      notes: [
        `batches: ${batches.length}, ${lines} netted lines for ${PAYMENTS} payments; gas attributed to payments: ${attributed} (= total: ${attributed === totalGas})`,
        `time: created+paid ${Math.round(createdMs)} ms; settled in ${Math.round(settleMs)} ms (${Math.round((PAYMENTS * 1000) / settleMs)} payments/s)`,
        `single payment, paid → settled over ${LATENCY_SAMPLES}: median ${Math.round(latencies[Math.floor(latencies.length / 2)]!)} ms, p95 ${Math.round(p95)} ms, max ${Math.round(latencies.at(-1)!)} ms`,
        `invariants: ${invariants.ok ? 'ok' : invariants.problems.join('; ')} (treasury ledger = chain = ${invariants.treasury.chain})`,
      ],
      checks: [
        {
          label: `gas per settled payment < ${LIMIT * 100}% of a plain ERC-20 transfer (fresh: ${((perPayment / fresh) * 100).toFixed(1)}%, existing holder: ${((perPayment / existing) * 100).toFixed(1)}%)`,
          pass: perPayment < LIMIT * existing && perPayment < LIMIT * fresh,
        },
        { label: `paid → settled p95 ≤ ${LATENCY_P95_MS} ms (${Math.round(p95)} ms)`, pass: p95 <= LATENCY_P95_MS },
        { label: 'every address received exactly its payments', pass: balancesOk },
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
