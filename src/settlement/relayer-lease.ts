// The relayer lease: one relayer key on one chain is driven by one lease holder at a time
// (relayer_leases). Whoever signs, allocates nonces or undoes a confirmation checks it first
// (fencing: a holder whose lease lapsed changes nothing on that chain).

import { sql } from 'kysely';
import type { ChainSession } from './chain-session.ts';
import { isDeadHolderOnThisHost, type SettlementContext } from './context.ts';
import { holdsLease } from '../db/repositories/relayer-leases.ts';

/**
 * Takes or renews the relayer lease for this chain. True when this worker holds it now. A lease is
 * taken over when it expired, or at once when its holder is a dead process on this host.
 */
export async function acquireRelayerLease(ctx: SettlementContext, session: ChainSession): Promise<boolean> {
  const { db, holder } = ctx;
  const ttl = ctx.options.leaseTtlMs;
  const expiresAt = sql<Date>`now() + (${ttl}::int * interval '1 millisecond')`;
  const current = await db
    .selectFrom('relayer_leases')
    .select(['holder', sql<boolean>`expires_at < now()`.as('expired')])
    .where('chain_key', '=', session.key)
    .where('relayer_address', '=', session.relayer)
    .executeTakeFirst();
  if (!current) {
    await db
      .insertInto('relayer_leases')
      .values({
        chain_key: session.key,
        relayer_address: session.relayer,
        holder,
        expires_at: expiresAt,
        next_nonce: 0n,
      })
      .onConflict((oc) => oc.columns(['chain_key', 'relayer_address']).doNothing())
      .execute();
    return await holdsLease(db, ctx, session);
  }
  const dead = current.holder !== holder && !current.expired && isDeadHolderOnThisHost(current.holder);
  if (current.holder !== holder && !current.expired && !dead) return false;
  const taken = await db
    .updateTable('relayer_leases')
    .set({ holder, expires_at: expiresAt, updated_at: sql`now()` })
    .where('chain_key', '=', session.key)
    .where('relayer_address', '=', session.relayer)
    // Compare-and-set on the holder we judged: if someone else took or renewed it since, we lose.
    .where('holder', '=', current.holder)
    .where((eb) => eb.or([eb('holder', '=', holder), eb('expires_at', '<', sql<Date>`now()`), eb.lit(dead)]))
    .executeTakeFirst();
  if (Number(taken.numUpdatedRows) === 1 && current.holder !== holder) {
    ctx.logger.info({ chain: session.key, previous: current.holder, dead }, 'relayer lease taken over');
  }
  return Number(taken.numUpdatedRows) === 1;
}

/** Gives the lease up (graceful stop) so another worker can take over without waiting. */
export async function releaseRelayerLease(ctx: SettlementContext, session: ChainSession): Promise<void> {
  await ctx.db
    .updateTable('relayer_leases')
    .set({ expires_at: sql`now()`, updated_at: sql`now()` })
    .where('chain_key', '=', session.key)
    .where('relayer_address', '=', session.relayer)
    .where('holder', '=', ctx.holder)
    .execute();
}
