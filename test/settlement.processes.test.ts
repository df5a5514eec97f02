// Settlement across worker processes on one Postgres, against one RPC devnet:
//   acceptance 3: kill -9 the worker at 30 random points while 200 payments settle, restarting it
//                 each time; every payment is settled exactly once.
//   acceptance 5: three workers settle 300 payments with no double transfer.
// Workers are real `plainpay serve --role worker` processes, so these need a database several
// processes can open: Postgres. PGlite allows one process per data directory, so under the default
// `npm test` (no DATABASE_URL) they are skipped; CI runs test/ again on Postgres, where they run.
// Each test file has a database of its own (test/support/harness.ts), since a worker settles every
// paid payment it can see.

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { DEV_ACCOUNTS, type DevnetRpcServer, startDevnetRpcServer } from '../src/chain/devnet.ts';
import type { PaymentRow } from '../src/db/database.ts';
import type { Runtime } from '../src/runtime.ts';
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

let devnet: DevnetRpcServer;
let chain: ChainConnection;
let runtime: Runtime;
let databaseUrl: string;
const living: WorkerProcess[] = [];

beforeAll(async () => {
  if (!isPostgres) return;
  // Interval mining keeps blocks coming, so CONFIRMATIONS=3 progresses on a quiet chain and a kill
  // can land while a batch is mined but not yet confirmed.
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

function worker(extra: Record<string, string>): WorkerProcess {
  const w = spawnWorker(databaseUrl, devnet, extra);
  living.push(w);
  void w.exited.then(() => living.splice(living.indexOf(w), 1));
  return w;
}

async function allSettled(payments: readonly PaymentRow[]): Promise<boolean> {
  const open = await runtime.db
    .selectFrom('payments')
    .select('id')
    .where(
      'id',
      'in',
      payments.map((p) => p.id),
    )
    .where('status', '!=', 'settled')
    .limit(1)
    .execute();
  return open.length === 0;
}

describe('settlement worker processes (Postgres)', () => {
  it.skipIf(!isPostgres)(
    'kill -9 at 30 random points while 200 payments settle: each settles exactly once (acceptance 3)',
    async () => {
      const started = performance.now();
      const merchant = await testAccount(runtime);
      const specs = spreadOver(payoutAddresses(10), 200);
      // Small batches and three confirmations: many batches, each spending time in every state
      // (planned, signed, sent, mined, confirmed) where a kill can catch it.
      const env = { SETTLEMENT_BATCH_MAX: '4', SETTLEMENT_BATCH_WINDOW_MS: '50', CONFIRMATIONS: '3' };
      const payments: PaymentRow[] = [];
      const KILLS = 30;
      const killedAfter: number[] = [];
      const killedAt: Date[] = [];
      for (let round = 0; round < KILLS; round++) {
        const w = worker(env);
        // Payments keep arriving while workers come and go.
        const batch = specs.slice(
          Math.floor((round * specs.length) / KILLS),
          Math.floor(((round + 1) * specs.length) / KILLS),
        );
        payments.push(...(await createPaidPayments(runtime, merchant.accountId, batch)));
        await w.running;
        const delay = Math.floor(Math.random() * 1_000);
        killedAfter.push(delay);
        await sleep(delay);
        killedAt.push(new Date());
        w.child.kill('SIGKILL');
        await w.exited;
      }
      expect(payments).toHaveLength(200);
      const settledBeforeLast = await runtime.db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('account_id', '=', merchant.accountId)
        .where('status', '=', 'settled')
        .executeTakeFirstOrThrow();

      const last = worker(env);
      await last.running;
      await waitUntil('200 settlements after the last restart', () => allSettled(payments), 60_000);
      last.child.kill('SIGTERM');
      expect(await last.exited).toBe(0);

      const batches = await runtime.db
        .selectFrom('settlement_batches')
        .select(['status', sql<number>`count(*)::int`.as('n')])
        .groupBy('status')
        .execute();
      const txs = await runtime.db
        .selectFrom('chain_transactions')
        .select(['status', sql<number>`count(*)::int`.as('n')])
        .groupBy('status')
        .execute();
      // Evidence that kills hit batches in flight: signed and sent, not yet confirmed.
      const spans = await runtime.db
        .selectFrom('settlement_batches')
        .select(['sent_at', 'finished_at'])
        .where('sent_at', 'is not', null)
        .execute();
      const inFlightKills = killedAt.filter((at) =>
        spans.some((b) => b.sent_at! <= at && (b.finished_at === null || at <= b.finished_at)),
      ).length;
      console.log(
        `acceptance 3: ${inFlightKills} of ${KILLS} kills hit a batch in flight; ${KILLS} kills at ${killedAfter.join(',')} ms after start; ${settledBeforeLast.n}/200 settled ` +
          `before the last restart; batches ${JSON.stringify(batches)}; transactions ${JSON.stringify(txs)}; ` +
          `${Math.round((performance.now() - started) / 1000)} s`,
      );
      await expectSettledExactlyOnce(runtime, chain, payments);
    },
    240_000,
  );

  it.skipIf(!isPostgres)(
    'three workers on one Postgres settle 300 payments with no double transfer (acceptance 5)',
    async () => {
      const started = performance.now();
      const merchant = await testAccount(runtime);
      const env = { SETTLEMENT_BATCH_MAX: '10', SETTLEMENT_BATCH_WINDOW_MS: '100', CONFIRMATIONS: '1' };
      const workers = [worker(env), worker(env), worker(env)];
      await Promise.all(workers.map((w) => w.running));
      const payments = await createPaidPayments(runtime, merchant.accountId, spreadOver(payoutAddresses(20), 300));
      await waitUntil('300 settlements by three workers', () => allSettled(payments), 90_000);
      for (const w of workers) w.child.kill('SIGTERM');
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
      for (const w of workers) expect(w.output.filter((line) => /"level":50/.test(line))).toEqual([]);
      const warnings = workers.flatMap((w) => w.output.filter((line) => /"level":40/.test(line)));
      console.log(
        `acceptance 5: 300 payments by 3 workers in ${Math.round((performance.now() - started) / 1000)} s; ` +
          `${warnings.length} warnings${warnings.length > 0 ? `, first: ${warnings[0]!.slice(0, 300)}` : ''}`,
      );
      await expectSettledExactlyOnce(runtime, chain, payments);
    },
    180_000,
  );
});
