// Test support for settlement: the file's database, runtimes on a given chain, worker processes,
// and the invariant check every settlement test ends with.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import { expect } from 'vitest';
import { type ChainConnection, readTokenBalance } from '../../src/chain/chain.ts';
import { batchPayoutAbi } from '../../src/chain/contracts/abis.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer } from '../../src/chain/devnet.ts';
import { freshAddresses } from '../../src/chain/testing.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { createLogger } from '../../src/core/logger.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { checkSettlementInvariants, type SettlementInvariantReport } from '../../src/settlement/invariants.ts';
import { afterFile } from './after-file.ts';
import { testConfig, testDatabase } from './harness.ts';
import { expectedByAddress } from './settlement-fixtures.ts';

/** A runtime on the file's database and the given chain (never closed by the runtime). */
export async function settlementRuntime(
  chain: ChainConnection,
  env: Record<string, string> = {},
): Promise<Runtime & { clock: ManualClock }> {
  const runtime = await createRuntime(testConfig(env), {
    database: await testDatabase(),
    migrate: false,
    clock: new ManualClock(),
    logger: createLogger(process.env.SETTLEMENT_TEST_LOG ?? 'silent'),
    chain,
  });
  afterFile(() => runtime.close());
  return runtime as Runtime & { clock: ManualClock };
}

/** Waits until `check` returns true, polling; fails with `what` after timeoutMs. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Acceptance 6: sum zero per asset, no negative balance, ledger = chain for the treasury, … */
export async function expectSettlementInvariants(
  runtime: Runtime,
  chain: ChainConnection,
): Promise<SettlementInvariantReport> {
  const report = await checkSettlementInvariants(runtime, chain);
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
  return report;
}

export const CLI = fileURLToPath(new URL('../../bin/plainpay.mjs', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves when the process printed that it is running. */
  running: Promise<void>;
  exited: Promise<number | null>;
  output: string[];
}

/** `plainpay serve --role worker` against a Postgres URL and an RPC devnet. */
export function spawnWorker(
  databaseUrl: string,
  devnet: Pick<DevnetRpcServer, 'url' | 'chainId' | 'tokenAddress' | 'batchAddress'>,
  extra: Record<string, string> = {},
): WorkerProcess {
  const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-settle-worker-'));
  const child = spawn(process.execPath, [CLI, 'serve', '--role', 'worker'], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      CHAIN_RPC_URL: devnet.url,
      CHAIN_ID: String(devnet.chainId),
      SETTLEMENT_TOKEN_ADDRESS: devnet.tokenAddress,
      BATCH_CONTRACT_ADDRESS: devnet.batchAddress,
      RELAYER_PRIVATE_KEY: DEV_ACCOUNTS.relayer.privateKey,
      LOG_LEVEL: 'warn',
      PLAINPAY_MASTER_KEY: randomBytes(32).toString('base64'),
      PLAINPAY_DATA_DIR: dataDir,
      DEMO_ACCOUNT: '0',
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => output.push(line));
  }
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      rmSync(dataDir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  const running = new Promise<void>((resolve, reject) => {
    // The banner goes to stderr when stdout carries JSON logs (LOG_FORMAT).
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (line.startsWith('plainpay is running')) resolve();
      });
    }
    void exited.then(() => reject(new Error(`worker exited before running:\n${output.join('\n')}`)));
  });
  running.catch(() => {});
  return { child, running, exited, output };
}

/** Distinct addresses no devnet has seen (random seed per call). */
export function payoutAddresses(count: number): Address[] {
  return freshAddresses(randomBytes(8).toString('hex'), count);
}

/**
 * Every payment settled exactly once: all `settled`, one transfer each, each transfer in exactly one
 * confirmed batch, each confirmed batch paid once on chain (BatchPaid) and no other batch paid,
 * on-chain balances equal to the expected sums, one payment.settled event each, and the invariants.
 */
export async function expectSettledExactlyOnce(
  runtime: Runtime,
  chain: ChainConnection,
  payments: readonly PaymentRow[],
): Promise<void> {
  const ids = payments.map((p) => p.id);
  const rows = await runtime.db.selectFrom('payments').select(['id', 'status']).where('id', 'in', ids).execute();
  expect(rows.filter((r) => r.status !== 'settled')).toEqual([]);
  expect(rows).toHaveLength(ids.length);

  const transfers = await runtime.db.selectFrom('transfers').selectAll().where('source_id', 'in', ids).execute();
  const withAddress = payments.filter((p) => p.payout_address !== null);
  expect(transfers).toHaveLength(withAddress.length);
  expect(new Set(transfers.map((t) => t.source_id)).size).toBe(transfers.length);
  expect(transfers.filter((t) => t.status !== 'confirmed')).toEqual([]);

  const memberships = await runtime.db
    .selectFrom('settlement_batch_transfers as bt')
    .innerJoin('settlement_batches as b', 'b.id', 'bt.batch_id')
    .select(['bt.transfer_id', 'b.id as batch_id', 'b.status', 'b.batch_key', 'b.total_minor'])
    .where(
      'bt.transfer_id',
      'in',
      transfers.map((t) => t.id),
    )
    .execute();
  const confirmedPerTransfer = new Map<string, number>();
  for (const m of memberships) {
    if (m.status === 'confirmed')
      confirmedPerTransfer.set(m.transfer_id, (confirmedPerTransfer.get(m.transfer_id) ?? 0) + 1);
  }
  for (const t of transfers) expect(confirmedPerTransfer.get(t.id), `transfer ${t.id}`).toBe(1);

  // The chain's own record: every BatchPaid is one confirmed batch of ours, once.
  const batchIds = [...new Set(memberships.map((m) => m.batch_id))];
  const batches = await runtime.db.selectFrom('settlement_batches').selectAll().where('id', 'in', batchIds).execute();
  const paidEvents = await chain.publicClient.getContractEvents({
    address: chain.batchAddress,
    abi: batchPayoutAbi,
    eventName: 'BatchPaid',
    fromBlock: 0n,
  });
  const paidKeys = new Map<string, bigint>();
  for (const e of paidEvents) {
    const key = e.args.batchId!.toLowerCase();
    expect(paidKeys.has(key), `batch id ${key} paid twice`).toBe(false);
    paidKeys.set(key, e.args.total!);
  }
  for (const b of batches) {
    if (b.status === 'confirmed') expect(paidKeys.get(b.batch_key.toLowerCase())).toBe(b.total_minor);
    else expect(paidKeys.has(b.batch_key.toLowerCase()), `unconfirmed batch ${b.id} was paid`).toBe(false);
  }

  for (const [address, sum] of expectedByAddress(payments)) {
    expect(await readTokenBalance(chain, address as Address), address).toBe(sum);
  }

  const events = await runtime.db
    .selectFrom('events')
    .select(['object_id'])
    .where('type', '=', 'payment.settled')
    .where('object_id', 'in', ids)
    .execute();
  expect(events).toHaveLength(ids.length);
  expect(new Set(events.map((e) => e.object_id)).size).toBe(ids.length);

  await expectSettlementInvariants(runtime, chain);
}
