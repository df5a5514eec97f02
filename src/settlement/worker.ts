// The settlement worker: one loop per process, any number of processes on one Postgres. Every turn:
//   1. take paid payments (FOR UPDATE SKIP LOCKED) and start their settlement (every worker);
//   2. if on-chain work exists: check that the node serves the chain settlement signs for (a remote
//      node; otherwise refuse to go on: chain-health.ts), and if this worker holds the relayer lease
//      for the chain: re-check confirmed batches for reorgs (reorgs.ts), repair nonce gaps
//      (nonces.ts), follow sent batches (confirm / fail / re-broadcast / fee bump), plan batches
//      from queued transfers (netted), sign-store-broadcast planned batches, then follow and
//      submit x402 authorizations (authorizations.ts) the same way.
// While on-chain work is in flight the loop turns every pollIntervalMs (a busy turn goes again at
// once); with none it sleeps until a paid payment or a queued transfer is announced (notifications),
// the next held transfer falls due, or idlePollMs passes (a lost notification costs no more).
// Beside the loop, a timer raises the stuck-batch alarm from the database alone.
// Coordination is only row locks, compare-and-set and unique constraints in Postgres; a worker
// killed at any point leaves nothing another worker cannot finish.

import { NOTIFICATION_CHANNELS } from '../db/notifications.ts';
import { passFailures, SAFETY_POLL_MS, untilDue, wakeOnNotifications, wakeup, type WorkerJob } from '../worker-job.ts';
import { planBatches, replanBatchesFromGoneChains } from './batches.ts';
import { hasOnChainWork, nextSettlementDueAt } from '../db/repositories/transfers.ts';
import { checkStuckBatches, verifyChainIdentity } from './chain-health.ts';
import {
  type ChainIdentity,
  type ChainSession,
  identifyChain,
  isEphemeralChain,
  openChainSession,
} from './chain-session.ts';
import { repairNonceGaps } from './nonces.ts';
import { type ChainHead, readHead, watchConfirmedBatches } from './reorgs.ts';
import {
  defaultSettlementOptions,
  newHolderId,
  type SettlementContext,
  type SettlementDeps,
  type SettlementOptions,
} from './context.ts';
import type { ChainConnection } from '../chain/chain.ts';
import { testMoneyMayMoveOn } from '../chain/test-networks.ts';
import { settlePaidPayments } from './payment-settlement.ts';
import { sendPlannedBatches, trackSentBatches } from './relayer.ts';
import {
  submitRecordedAuthorizations,
  trackSubmittedAuthorizations,
  watchConfirmedAuthorizations,
} from './authorizations.ts';
import { acquireRelayerLease, releaseRelayerLease } from './relayer-lease.ts';

export interface SettlementWorkerOptions extends Partial<SettlementOptions> {
  /** Lease holder id; default host:pid:random. */
  holder?: string;
  /**
   * The longest the loop sleeps with no on-chain work in flight (it is woken by a payment.paid event
   * or a queued transfer, and at the next held transfer's due time). Default SAFETY_POLL_MS.
   */
  idlePollMs?: number;
}

export interface SettlementWorker {
  /** Finishes the current turn, gives the relayer lease up, and stops. */
  stop(): Promise<void>;
}

export function startSettlementWorker(deps: SettlementDeps, options: SettlementWorkerOptions = {}): SettlementWorker {
  const { holder, idlePollMs = SAFETY_POLL_MS, ...tunables } = options;
  const ctx: SettlementContext = {
    toolEnvironment: deps,
    db: deps.db,
    config: deps.config,
    logger: deps.logger.child({ job: 'settlement' }),
    clock: deps.clock,
    options: { ...defaultSettlementOptions(deps.config), ...tunables },
    holder: holder ?? newHolderId(),
    broadcastHere: new Set(),
  };
  let session: ChainSession | undefined;
  let testModeOnChain: boolean | undefined;

  /** One turn; resolves to how long to wait before the next (0: it did something, go again). */
  const turn = async (): Promise<number> => {
    const taken = await settlePaidPayments(deps, {
      chunk: ctx.options.intakeChunk,
      testModeOnChain: async () => {
        testModeOnChain ??= testMoneyMayMoveOn(await deps.chain());
        return testModeOnChain;
      },
    });
    const work = await chainWork(ctx);
    // For a turn that did nothing: in-flight work is looked at again soon; otherwise the loop sleeps
    // until the next held transfer is due, or idles.
    const idle = (): number =>
      taken > 0 ? 0 : work.active ? ctx.options.pollIntervalMs : untilDue(work.nextDueAt, ctx.clock.now(), idlePollMs);
    if (!work.active) return idle();

    const conn = await deps.chain();
    const head = await readHead(conn);
    if (isEphemeralChain(conn)) {
      session = await openChainSession(deps, conn);
    } else {
      const identity = await checkIdentity(conn, head);
      if (identity === undefined) return idle();
      session = await openChainSession(deps, conn, identity);
    }
    if (!(await acquireRelayerLease(ctx, session))) return idle();
    return (await chainPass(ctx, session, head, watchedHead)) ? 0 : idle();
  };

  const checkIdentity = chainIdentityGate(ctx);
  /** The head the reorg watch last looked at, per chain: an unchanged head cannot have reorganised. */
  const watchedHead = new Map<string, string>();

  // The chain is reached only when there is chain work, the embedded devnet included: it is not
  // started at boot, so an idle `npm start` does not hold Hardhat's EDR (about 25-50 MB resident) for
  // a chain it may never use. The first settlement or payout after a start waits for it once (about
  // a second), well inside the instant schedule's 2 s.

  const alarmed = new Set<string>();
  const stuckTimer = setInterval(() => {
    checkStuckBatches(ctx.db, ctx.logger, ctx.holder, ctx.options, alarmed).catch((error: unknown) =>
      ctx.logger.warn({ err: error }, 'stuck-batch check failed; trying again'),
    );
  }, ctx.options.stuckCheckIntervalMs);
  stuckTimer.unref();

  let stopping = false;
  const sleeper = wakeup();
  const unlisten = wakeOnNotifications(
    deps,
    'settlement',
    [
      // A payment to take in. Its intake queues the transfer, so settling it never waits a poll.
      { channel: NOTIFICATION_CHANNELS.events, accepts: (payload) => payload.startsWith('payment.paid ') },
      // A transfer queued by anyone else (a payout, a split leg).
      { channel: NOTIFICATION_CHANNELS.settlement },
    ],
    sleeper.wake,
  );
  const loop = (async () => {
    // Back-off, and one line per outage of the database or the node rather than one per turn.
    const failures = passFailures('settlement', ctx.options.pollIntervalMs, ctx.logger);
    while (!stopping) {
      let delay: number;
      try {
        delay = await turn();
        failures.succeeded();
      } catch (error) {
        delay = failures.failed(error);
      }
      if (stopping) break;
      await sleeper.sleep(delay);
    }
    clearInterval(stuckTimer);
    await unlisten();
    if (session) await releaseRelayerLease(ctx, session).catch(() => {});
  })();

  return {
    async stop() {
      stopping = true;
      sleeper.wake();
      await loop;
    },
  };
}

/**
 * One pass on the chain, holding the relayer lease: batches of a gone devnet re-planned, the reorg
 * watch (on a new head), nonce gaps repaired, sent batches followed, new ones planned and sent, and
 * x402 authorizations watched, followed and submitted. Whether it did anything.
 */
async function chainPass(
  ctx: SettlementContext,
  session: ChainSession,
  head: ChainHead,
  watchedHead: Map<string, string>,
): Promise<boolean> {
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
  // USDC paid in by x402 authorizations rides the same lease and nonces (authorizations.ts).
  const authorizations =
    (await watchConfirmedAuthorizations(ctx, session)) +
    (await trackSubmittedAuthorizations(ctx, session)) +
    (await submitRecordedAuthorizations(ctx, session));
  return reverted > 0 || repaired > 0 || ended > 0 || planned > 0 || sent > 0 || authorizations > 0;
}

/**
 * Whether the node serves the chain settlement signs for: asked again on every new head (a node
 * serving another chain has another head) and at least every identityCheckIntervalMs, always
 * before anything is signed or broadcast in a turn. Undefined while it serves another: settlement
 * refuses to sign, and says so once a minute.
 */
function chainIdentityGate(
  ctx: SettlementContext,
): (conn: ChainConnection, head: ChainHead) => Promise<ChainIdentity | undefined> {
  let identity: ChainIdentity | undefined;
  let identityHead: string | undefined;
  let identityCheckedAt = 0;
  let lastRefusal: string | undefined;
  let lastRefusalLoggedAt = 0;
  return async (conn, head) => {
    const due =
      identity === undefined ||
      head.hash !== identityHead ||
      Date.now() - identityCheckedAt >= ctx.options.identityCheckIntervalMs;
    if (!due) return identity;
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
      return undefined;
    }
    lastRefusal = undefined;
    identity = observed;
    identityHead = head.hash;
    return identity;
  };
}

/**
 * What the chain side has to do. Active: instant transfers to plan, batches to send or follow,
 * confirmed batches inside their finality window (the reorg watch re-checks them): the loop keeps
 * turning. Transfers held by a schedule (hourly, daily, threshold) are not: the loop sleeps until
 * the first falls due (nextDueAt).
 */
async function chainWork(ctx: SettlementContext): Promise<{ active: boolean; nextDueAt: Date | null }> {
  const [onChain, nextDueAt] = await Promise.all([hasOnChainWork(ctx.db), nextSettlementDueAt(ctx.db)]);
  // A held transfer due now is active work (compared on the service's clock, which computed due_at).
  const heldDue = nextDueAt !== null && nextDueAt.getTime() <= ctx.clock.now().getTime();
  return { active: onChain || heldDue, nextDueAt };
}

/** The worker job for `plainpay serve` (all roles, or --role worker). */
export const settlementJob: WorkerJob = (runtime) => {
  const worker = startSettlementWorker(runtime);
  return () => worker.stop();
};
