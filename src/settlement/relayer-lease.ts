// The relayer lease: one relayer key on one chain is driven by one lease holder at a time
// (relayer_leases). Whoever signs, allocates nonces or undoes a confirmation checks it first
// (fencing: a holder whose lease lapsed changes nothing on that chain).

import { type ChainSession, leaseKey } from './chain-session.ts';
import { isDeadHolderOnThisHost, type SettlementContext } from './context.ts';
import {
  endRelayerLease,
  findRelayerLease,
  holdsLease,
  insertRelayerLease,
  takeRelayerLease,
} from '../db/repositories/relayer-leases.ts';

/**
 * Takes or renews the relayer lease for this chain. True when this worker holds it now. A lease is
 * taken over when it expired, or at once when its holder is a dead process on this host.
 */
export async function acquireRelayerLease(ctx: SettlementContext, session: ChainSession): Promise<boolean> {
  const { db, holder } = ctx;
  const key = leaseKey(session);
  const ttlMs = ctx.options.leaseTtlMs;
  const current = await findRelayerLease(db, key);
  if (!current) {
    await insertRelayerLease(db, key, holder, ttlMs);
    return await holdsLease(db, ctx, session);
  }
  const dead = current.holder !== holder && !current.expired && isDeadHolderOnThisHost(current.holder);
  if (current.holder !== holder && !current.expired && !dead) return false;
  const taken = await takeRelayerLease(db, key, { holder, judged: current.holder, dead, ttlMs });
  if (taken && current.holder !== holder) {
    ctx.logger.info({ chain: session.key, previous: current.holder, dead }, 'relayer lease taken over');
  }
  return taken;
}

/** Gives the lease up (graceful stop) so another worker can take over without waiting. */
export async function releaseRelayerLease(ctx: SettlementContext, session: ChainSession): Promise<void> {
  await endRelayerLease(ctx.db, leaseKey(session), ctx.holder);
}
