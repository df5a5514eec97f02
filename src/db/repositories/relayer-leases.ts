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
