// The hourly schedule across worker processes killed with SIGKILL (docs/settlement.md, "Schedules"):
// payments of an hourly account wait in the queue for their window while `plainpay serve --role
// worker` is killed at random points, inside windows and as they close, and restarted; in the end
// every payment settled exactly once, and everything due to one address at one window's end went
// out in one line of one batch. The hour is shortened (SETTLEMENT_HOUR_MS) so that windows close
// during the test. Worker processes need Postgres (see settlement.processes.test.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer, startDevnetRpcServer } from '../src/chain/devnet.ts';
import type { PaymentRow } from '../src/db/database.ts';
import type { Runtime } from '../src/runtime.ts';
import { windowEnd } from '../src/domain/settlement-windows.ts';
import { saveSettlementSchedule } from '../src/db/repositories/settlement-schedules.ts';
import { fileDatabaseUrl, isPostgres, testAccount } from './support/harness.ts';
import {
  expectSettledExactlyOnce,
  payoutAddresses,
  settlementRuntime,
  spawnWorker,
  type WorkerProcess,
  waitUntil,
} from './support/settlement.ts';
import { createPaidPayments, spreadOver } from './support/settlement-fixtures.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A 10 s "hour": windows close while workers come and go. */
const HOUR_MS = 10_000;
const ENV = { SETTLEMENT_HOUR_MS: String(HOUR_MS), CONFIRMATIONS: '1' };

let devnet: DevnetRpcServer;
let chain: ChainConnection;
let runtime: Runtime;
let databaseUrl: string;
const living: WorkerProcess[] = [];

beforeAll(async () => {
  if (!isPostgres) return;
  devnet = await startDevnetRpcServer({ blockIntervalMs: 150 });
  chain = await connectChain({
    rpcUrl: devnet.url,
    tokenAddress: devnet.tokenAddress,
    batchAddress: devnet.batchAddress,
    relayerPrivateKey: DEV_ACCOUNTS.relayer.privateKey,
    confirmations: 1,
  });
  runtime = await settlementRuntime(chain);
  databaseUrl = (await fileDatabaseUrl())!;
});

afterAll(async () => {
  for (const worker of living) worker.child.kill('SIGKILL');
  await Promise.all(living.map((w) => w.exited));
  await devnet?.close();
});

function worker(): WorkerProcess {
  const w = spawnWorker(databaseUrl, devnet, ENV);
  living.push(w);
  void w.exited.then(() => living.splice(living.indexOf(w), 1));
  return w;
}

describe('hourly settlement across killed worker processes (Postgres)', () => {
  it.skipIf(!isPostgres)(
    'kill -9 inside and at the end of hourly windows: each payment settles exactly once, one line per address per window',
    async () => {
      const merchant = await testAccount(runtime);
      await saveSettlementSchedule(
        runtime.db,
        { accountId: merchant.accountId, livemode: false },
        { schedule: 'hourly', thresholdMinor: null },
        null,
        new Date(),
      );
      // Each round: payments paid early in a window, a worker started, and killed with SIGKILL at a
      // random moment around the window's end (just before it, while its batch is planned, sent or
      // confirmed), never stopped cleanly.
      const addresses = payoutAddresses(5);
      const payments: PaymentRow[] = [];
      const ROUNDS = 4;
      let killsAfterWindow = 0;
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(HOUR_MS - (Date.now() % HOUR_MS) + 300);
        const paid = await createPaidPayments(runtime, merchant.accountId, spreadOver(addresses, 12));
        payments.push(...paid);
        const due = windowEnd('hourly', paid[0]!.paid_at!, HOUR_MS)!.getTime();
        const w = worker();
        await w.running;
        await sleep(due - 300 + Math.floor(Math.random() * 2_300) - Date.now());
        if (Date.now() >= due) killsAfterWindow += 1;
        w.child.kill('SIGKILL');
        await w.exited;
      }
      const settledBeforeLast = await runtime.db
        .selectFrom('payments')
        .select('id')
        .where('account_id', '=', merchant.accountId)
        .where('status', '=', 'settled')
        .execute();
      console.log(
        `hourly kill -9: ${ROUNDS} windows, ${killsAfterWindow} kills after a window closed; ` +
          `${settledBeforeLast.length}/${payments.length} settled before the last restart`,
      );

      const last = worker();
      await last.running;
      const ids = payments.map((p) => p.id);
      await waitUntil(
        'every hourly settlement after the last restart',
        async () => {
          const open = await runtime.db
            .selectFrom('payments')
            .select('id')
            .where('id', 'in', ids)
            .where('status', '!=', 'settled')
            .limit(1)
            .execute();
          return open.length === 0;
        },
        90_000,
      );
      last.child.kill('SIGTERM');
      expect(await last.exited).toBe(0);

      await expectSettledExactlyOnce(runtime, chain, payments);
      // Each transfer waited for the window (all are hourly), and everything due to one address at
      // its end went out in one batch: one line, however many payments it carried.
      const transfers = await runtime.db
        .selectFrom('transfers')
        .select(['recipient', 'due_at', 'batch_id'])
        .where('source_id', 'in', ids)
        .execute();
      expect(transfers.filter((t) => t.due_at === null)).toEqual([]);
      const batchesPerWindowAndAddress = new Map<string, Set<string>>();
      for (const t of transfers) {
        const key = `${t.due_at!.toISOString()} ${t.recipient.toLowerCase()}`;
        const set = batchesPerWindowAndAddress.get(key) ?? new Set<string>();
        set.add(t.batch_id!);
        batchesPerWindowAndAddress.set(key, set);
      }
      for (const [key, batches] of batchesPerWindowAndAddress) expect(batches.size, key).toBe(1);
      // Five addresses per window: netting happened (12 payments each).
      expect(batchesPerWindowAndAddress.size).toBe(5 * ROUNDS);
    },
    240_000,
  );
});
