// The settlement worker: one loop per process, any number of processes on one Postgres. Every turn:
//   1. take paid payments (FOR UPDATE SKIP LOCKED) and start their settlement (every worker);
//   2. if on-chain work exists: check that the node serves the chain settlement signs for (a remote
//      node; otherwise refuse to go on: chain-health.ts), and if this worker holds the relayer lease
//      for the chain: re-check confirmed batches for reorgs (reorgs.ts), repair nonce gaps
//      (nonces.ts), follow sent batches (confirm / fail / re-broadcast / fee bump), plan batches
//      from queued transfers (netted), sign-store-broadcast planned batches.
// Beside the loop, a timer raises the stuck-batch alarm from the database alone.
// Coordination is only row locks, compare-and-set and unique constraints in Postgres; a worker
// killed at any point leaves nothing another worker cannot finish.

import { sql } from 'kysely';
import type { Runtime } from '../runtime.ts';
import { passFailures, type WorkerJob } from '../worker-job.ts';
import { planBatches, replanBatchesFromGoneChains } from './batches.ts';
import { checkStuckBatches, verifyChainIdentity } from './chain-health.ts';
import {
  type ChainIdentity,
  type ChainSession,
  identifyChain,
  isEphemeralChain,
  openChainSession,
} from './chain-session.ts';
import { repairNonceGaps } from './nonces.ts';
import { readHead, watchConfirmedBatches } from './reorgs.ts';
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

    const conn = await runtime.chain();
    const head = await readHead(conn);
    if (isEphemeralChain(conn)) {
      session = await openChainSession(ctx.db, conn);
    } else {
      // Asked again on every new head (a node serving another chain has another head) and at least
      // every identityCheckIntervalMs; always before anything is signed or broadcast in this turn.
      const due =
        identity === undefined ||
        head.hash !== identityHead ||
        Date.now() - identityCheckedAt >= ctx.options.identityCheckIntervalMs;
      if (due) {
        identity = undefined;
        const observed = await identifyChain(conn);
        const verdict = await verifyChainIdentity(ctx.db, observed, conn.chainId, ctx.logger);
        identityCheckedAt = Date.now();
        if (!verdict.ok) {
          if (lastRefusal !== verdict.observed.key || Date.now() - lastRefusalLoggedAt >= 60_000) {
            lastRefusal = verdict.observed.key;
            lastRefusalLoggedAt = Date.now();
            ctx.logger.error(
              { expected: verdict.expected.key, observed: verdict.observed.key, reason: verdict.reason },
              'chain identity: the node serves another chain; settlement refuses to sign or broadcast',
            );
          }
          return taken > 0;
        }
        lastRefusal = undefined;
        identity = observed;
        identityHead = head.hash;
      }
      session = await openChainSession(ctx.db, conn, identity);
    }
    if (!(await acquireRelayerLease(ctx, session))) return taken > 0;
    await replanBatchesFromGoneChains(ctx, session);
    let reverted = 0;
    if (head.hash !== watchedHead.get(session.key)) {
      const watch = await watchConfirmedBatches(ctx, session, head);
      reverted = watch.reverted;
      // A pass that could not look at every batch is done again, even on the same head.
      if (watch.complete) watchedHead.set(session.key, head.hash);
      else watchedHead.delete(session.key);
    }
    const repaired = await repairNonceGaps(ctx, session);
    const ended = await trackSentBatches(ctx, session);
    const planned = await planBatches(ctx, session);
    const sent = await sendPlannedBatches(ctx, session);
    return taken > 0 || reverted > 0 || repaired > 0 || ended > 0 || planned > 0 || sent > 0;
  };

  let identity: ChainIdentity | undefined;
  let identityHead: string | undefined;
  let identityCheckedAt = 0;
  let lastRefusal: string | undefined;
  let lastRefusalLoggedAt = 0;
  /** The head the reorg watch last looked at, per chain: an unchanged head cannot have reorganised. */
  const watchedHead = new Map<string, string>();

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

  const alarmed = new Set<string>();
  const stuckTimer = setInterval(() => {
    checkStuckBatches(ctx.db, ctx.logger, ctx.holder, ctx.options, alarmed).catch((error: unknown) =>
      ctx.logger.warn({ err: error }, 'stuck-batch check failed; trying again'),
    );
  }, ctx.options.stuckCheckIntervalMs);
  stuckTimer.unref();

  let stopping = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    // Back-off, and one line per outage of the database or the node rather than one per turn.
    const failures = passFailures('settlement', ctx.options.pollIntervalMs, ctx.logger);
    while (!stopping) {
      let delay: number;
      try {
        const busy = await turn();
        failures.succeeded();
        delay = busy ? 0 : ctx.options.pollIntervalMs;
      } catch (error) {
        delay = failures.failed(error);
      }
      if (stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    clearInterval(stuckTimer);
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
  // Confirmed batches inside their finality window are work too: the reorg watch re-checks them.
  // Only those of the chain settlement signs for (a chain adopted away is no longer watched), and of
  // in-process devnets (finalized at confirmation; an older one's are closed out by the first turn).
  const row = await sql<{ work: boolean }>`
    select exists (select 1 from transfers where status in ('queued', 'batched', 'sent'))
        or exists (select 1 from settlement_batches b
                    where b.status = 'confirmed' and b.finalized_at is null
                      and (b.chain_key = (select s.chain_key from settlement_chain s where s.id = 'current')
                           or exists (select 1 from chains c where c.chain_key = b.chain_key and c.ephemeral))) as work`.execute(
    ctx.db,
  );
  return row.rows[0]?.work === true;
}

/** The worker job for `plainpay serve` (all roles, or --role worker). */
export const settlementJob: WorkerJob = (runtime) => {
  const worker = startSettlementWorker(runtime);
  return () => worker.stop();
};
