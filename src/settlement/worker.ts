// The settlement worker: one loop per process, any number of processes on one Postgres. Every turn:
//   1. take paid payments (FOR UPDATE SKIP LOCKED) and start their settlement (every worker);
//   2. if on-chain work exists, and this worker holds the relayer lease for the chain:
//      follow sent batches (confirm / fail / re-broadcast / fee bump), plan batches from queued
//      transfers (netted), sign-store-broadcast planned batches.
// Coordination is only row locks, compare-and-set and unique constraints in Postgres; a worker
// killed at any point leaves nothing another worker cannot finish.

import { sql } from 'kysely';
import type { Runtime } from '../runtime.ts';
import type { WorkerJob } from '../worker-job.ts';
import { planBatches, replanBatchesFromGoneChains } from './batches.ts';
import { type ChainSession, openChainSession } from './chain-session.ts';
import { defaultSettlementOptions, newHolderId, type SettlementContext, type SettlementOptions } from './context.ts';
import { TRANSFER_HANDLERS, type TransferHandlers } from './handlers.ts';
import { testMoneyMayMoveOn } from '../chain/test-networks.ts';
import { settlePaidPayments } from './payment-settlement.ts';
import { acquireRelayerLease, releaseRelayerLease, sendPlannedBatches, trackSentBatches } from './relayer.ts';

export interface SettlementWorkerOptions extends Partial<SettlementOptions> {
  handlers?: TransferHandlers;
  /** Lease holder id; default host:pid:random. */
  holder?: string;
}

export interface SettlementWorker {
  /** Finishes the current turn, gives the relayer lease up, and stops. */
  stop(): Promise<void>;
}

export function startSettlementWorker(runtime: Runtime, options: SettlementWorkerOptions = {}): SettlementWorker {
  const { handlers, holder, ...tunables } = options;
  const ctx: SettlementContext = {
    db: runtime.db,
    config: runtime.config,
    logger: runtime.logger.child({ job: 'settlement' }),
    clock: runtime.clock,
    handlers: handlers ?? TRANSFER_HANDLERS,
    options: { ...defaultSettlementOptions(runtime.config), ...tunables },
    holder: holder ?? newHolderId(),
    broadcastHere: new Set(),
  };
  let session: ChainSession | undefined;
  let testModeOnChain: boolean | undefined;

  const turn = async (): Promise<boolean> => {
    const taken = await settlePaidPayments({
      db: ctx.db,
      config: ctx.config,
      logger: ctx.logger,
      clock: ctx.clock,
      chunk: ctx.options.intakeChunk,
      testModeOnChain: async () => {
        testModeOnChain ??= testMoneyMayMoveOn(await runtime.chain());
        return testModeOnChain;
      },
    });
    if (!(await hasChainWork(ctx))) return taken > 0;

    session = await openChainSession(ctx.db, await runtime.chain());
    if (!(await acquireRelayerLease(ctx, session))) return taken > 0;
    await replanBatchesFromGoneChains(ctx, session);
    const ended = await trackSentBatches(ctx, session);
    const planned = await planBatches(ctx, session);
    const sent = await sendPlannedBatches(ctx, session);
    return taken > 0 || ended > 0 || planned > 0 || sent > 0;
  };

  // The all-in-one setup (`npm start`: PGlite and the in-process devnet) boots the devnet now rather
  // than on the first payment, so that the first settlement does not wait ~1 s for it. Elsewhere
  // the chain is reached only when there is chain work (a worker may never need it).
  if (runtime.config.chain.rpcUrl === undefined && runtime.dbKind === 'pglite') {
    void runtime
      .chain()
      .then((conn) => openChainSession(ctx.db, conn))
      .catch((error: unknown) =>
        ctx.logger.debug({ err: error }, 'chain warm-up failed; the first turn that needs it retries'),
      );
  }

  let stopping = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    let failures = 0;
    while (!stopping) {
      let busy = false;
      try {
        busy = await turn();
        failures = 0;
      } catch (error) {
        failures += 1;
        ctx.logger.warn({ err: error, failures }, 'settlement turn failed; retrying');
      }
      if (stopping) break;
      const poll = ctx.options.pollIntervalMs;
      const delay = failures > 0 ? Math.min(5_000, poll * 2 ** Math.min(failures, 7)) : busy ? 0 : poll;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    if (session) await releaseRelayerLease(ctx, session).catch(() => {});
  })();

  return {
    async stop() {
      stopping = true;
      wake?.();
      await loop;
    },
  };
}

async function hasChainWork(ctx: SettlementContext): Promise<boolean> {
  const row = await sql<{ work: boolean }>`
    select exists (select 1 from transfers where status in ('queued', 'batched', 'sent')) as work`.execute(ctx.db);
  return row.rows[0]?.work === true;
}

/** The worker job for `plainpay serve` (all roles, or --role worker). */
export const settlementJob: WorkerJob = (runtime) => {
  const worker = startSettlementWorker(runtime);
  return () => worker.stop();
};
