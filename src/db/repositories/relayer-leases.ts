import { sql } from 'kysely';
import type { Db } from '../database.ts';

/**
 * True when `holder` holds the relayer lease of this chain and key now (relayer_leases: one signer
 * per chain). Whoever signs, allocates nonces or records a batch's outcome checks it first, in its
 * own transaction (fencing: a holder whose lease lapsed changes nothing on that chain).
 */
export async function holdsLease(
  db: Db,
  ctx: { holder: string },
  session: { key: string; relayer: string },
): Promise<boolean> {
  const row = await db
    .selectFrom('relayer_leases')
    .select(sql<boolean>`holder = ${ctx.holder} and expires_at > now()`.as('held'))
    .where('chain_key', '=', session.key)
    .where('relayer_address', '=', session.relayer)
    .executeTakeFirst();
  return row?.held === true;
}

/**
 * True when `holder` holds a live relayer lease, or no live lease exists at all (the node is down):
 * the workers that speak for settlement, so that an alarm is raised once, not once per process.
 */
export async function speaksForSettlement(db: Db, holder: string): Promise<boolean> {
  const lease = await sql<{ speaks: boolean }>`
    select exists (select 1 from relayer_leases where holder = ${holder} and expires_at > now())
        or not exists (select 1 from relayer_leases where expires_at > now()) as speaks`.execute(db);
  return lease.rows[0]?.speaks === true;
}

/** A chain key and relayer address: the lease's key (one signer per chain). */
export interface LeaseKey {
  chainKey: string;
  relayer: string;
}

/** The lease of this chain and relayer, if any: its holder, and whether it has expired (by the database's clock). */
export async function findRelayerLease(
  db: Db,
  key: LeaseKey,
): Promise<{ holder: string; expired: boolean } | undefined> {
  return db
    .selectFrom('relayer_leases')
    .select(['holder', sql<boolean>`expires_at < now()`.as('expired')])
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .executeTakeFirst();
}

/** The first lease of a chain and relayer, for `holder`, for `ttlMs`; nothing when another insert came first. */
export async function insertRelayerLease(db: Db, key: LeaseKey, holder: string, ttlMs: number): Promise<void> {
  await db
    .insertInto('relayer_leases')
    .values({
      chain_key: key.chainKey,
      relayer_address: key.relayer,
      holder,
      expires_at: leaseExpiry(ttlMs),
      next_nonce: 0n,
    })
    .onConflict((oc) => oc.columns(['chain_key', 'relayer_address']).doNothing())
    .execute();
}

/**
 * Takes or renews the lease for `holder`, for `ttlMs`, compare-and-set on the holder the caller
 * judged (`judged`): if someone else took or renewed it since, nothing changes. It is taken when
 * `holder` holds it, when it expired, or when the caller found its holder dead (`dead`). True when
 * it was taken.
 */
export async function takeRelayerLease(
  db: Db,
  key: LeaseKey,
  take: { holder: string; judged: string; dead: boolean; ttlMs: number },
): Promise<boolean> {
  const taken = await db
    .updateTable('relayer_leases')
    .set({ holder: take.holder, expires_at: leaseExpiry(take.ttlMs), updated_at: sql`now()` })
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .where('holder', '=', take.judged)
    .where((eb) => eb.or([eb('holder', '=', take.holder), eb('expires_at', '<', sql<Date>`now()`), eb.lit(take.dead)]))
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1;
}

/** Ends `holder`'s lease now, so another worker can take over without waiting; nothing if it is not the holder. */
export async function endRelayerLease(db: Db, key: LeaseKey, holder: string): Promise<void> {
  await db
    .updateTable('relayer_leases')
    .set({ expires_at: sql`now()`, updated_at: sql`now()` })
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .where('holder', '=', holder)
    .execute();
}

/**
 * The lease's next nonce, and whether `holder` holds the lease now, locked for the caller's
 * transaction (the one that hands the nonce out): undefined when no lease exists.
 */
export async function lockRelayerLeaseNonce(
  trx: Db,
  key: LeaseKey,
  holder: string,
): Promise<{ next_nonce: bigint; held: boolean } | undefined> {
  return await trx
    .selectFrom('relayer_leases')
    .select(['next_nonce', sql<boolean>`holder = ${holder} and expires_at > now()`.as('held')])
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .forUpdate()
    .executeTakeFirst();
}

/** The nonce after the one just handed out, in the caller's transaction (under lockRelayerLeaseNonce's lock). */
export async function setNextNonce(trx: Db, key: LeaseKey, nextNonce: bigint): Promise<void> {
  await trx
    .updateTable('relayer_leases')
    .set({ next_nonce: nextNonce, updated_at: sql`now()` })
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .execute();
}

/** The lease's next nonce (what this relayer has handed out up to), read without a lock; undefined with no lease. */
export async function findNextNonce(db: Db, key: LeaseKey): Promise<bigint | undefined> {
  const lease = await db
    .selectFrom('relayer_leases')
    .select('next_nonce')
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .executeTakeFirst();
  return lease?.next_nonce;
}

/** An expiry `ttlMs` from now by the database's clock, which every holder's check reads too. */
function leaseExpiry(ttlMs: number) {
  return sql<Date>`now() + (${ttlMs}::int * interval '1 millisecond')`;
}
