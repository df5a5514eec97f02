// The chain settlement signs for (settlement_chain: one row, id 'current'), the chains it knows
// (chains), and what a node served instead: the queries of chain identity (src/settlement/chain-health.ts)
// and of the chain session (chain-session.ts), which records each chain it signs on.

import { type Selectable, sql } from 'kysely';
import type { Db } from '../database.ts';
import type { SettlementChainTable } from '../tables/settlement.ts';

export type SettlementChainRow = Selectable<SettlementChainTable>;

/** A chain as its identity names it. */
export interface KnownChain {
  chain_key: string;
  chain_id: number;
  genesis_hash: string;
}

/** The settlement_chain columns of a node found serving another chain, cleared. */
const NOTHING_OBSERVED = {
  observed_chain_key: null,
  observed_chain_id: null,
  observed_genesis_hash: null,
  observed_at: null,
} as const;

/** The chain settlement signs for; with `forUpdate`, locked for the caller's transaction. */
export async function findSettlementChain(
  db: Db,
  options: { forUpdate?: boolean } = {},
): Promise<SettlementChainRow | undefined> {
  const query = db.selectFrom('settlement_chain').selectAll().where('id', '=', 'current');
  return (options.forUpdate ? query.forUpdate() : query).executeTakeFirst();
}

/**
 * The remote chain of the newest batch still open on one (sent, or confirmed and not final), or
 * undefined: on first use, the chain those batches' transactions belong to.
 */
export async function newestOpenRemoteChain(db: Db): Promise<KnownChain | undefined> {
  const open = await db
    .selectFrom('settlement_batches as b')
    .innerJoin('chains as c', 'c.chain_key', 'b.chain_key')
    .select(['c.chain_key', 'c.chain_id', 'c.genesis_hash'])
    .where('c.ephemeral', '=', false)
    .where((eb) =>
      eb.or([
        eb('b.status', '=', 'sent'),
        eb.and([eb('b.status', '=', 'confirmed'), eb('b.finalized_at', 'is', null)]),
      ]),
    )
    .orderBy('b.sent_at', 'desc')
    .executeTakeFirst();
  return open?.genesis_hash
    ? { chain_key: open.chain_key, chain_id: open.chain_id, genesis_hash: open.genesis_hash }
    : undefined;
}

/** A chain's row in chains, once: a remote chain by its identity, or an in-process devnet (no genesis hash kept). */
export async function recordChain(
  db: Db,
  chain: { chain_key: string; chain_id: number; genesis_hash: string | null; ephemeral: boolean },
): Promise<void> {
  await db
    .insertInto('chains')
    .values(chain)
    .onConflict((oc) => oc.column('chain_key').doNothing())
    .execute();
}

/** A remote chain's row in chains, once. */
export async function ensureChain(db: Db, chain: KnownChain): Promise<void> {
  await recordChain(db, { ...chain, ephemeral: false });
}

/** Whether the chain was recorded as ephemeral (an in-process devnet); undefined for one not recorded. */
export async function isChainEphemeral(db: Db, chainKey: string): Promise<boolean | undefined> {
  const row = await db.selectFrom('chains').select('ephemeral').where('chain_key', '=', chainKey).executeTakeFirst();
  return row?.ephemeral;
}

/** The first chain ever signed for, unless a concurrent first use recorded one already. */
export async function recordFirstSettlementChain(db: Db, chain: KnownChain): Promise<void> {
  await db
    .insertInto('settlement_chain')
    .values({ id: 'current', ...chain, adopted_by: 'first_use' })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** A node serves another chain than settlement signs for: kept for readiness and the operator. */
export async function recordObservedChain(db: Db, observed: KnownChain): Promise<void> {
  await db
    .updateTable('settlement_chain')
    .set({
      observed_chain_key: observed.chain_key,
      observed_chain_id: observed.chain_id,
      observed_genesis_hash: observed.genesis_hash,
      observed_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .where('id', '=', 'current')
    .execute();
}

/** The node serves the expected chain again: nothing observed. */
export async function clearObservedChain(db: Db): Promise<void> {
  await db
    .updateTable('settlement_chain')
    .set({ ...NOTHING_OBSERVED, updated_at: sql`now()` })
    .where('id', '=', 'current')
    .execute();
}

/** The operator adopted the observed chain: settlement signs for it from now, nothing observed. */
export async function recordAdoptedChain(db: Db, adopted: KnownChain): Promise<void> {
  await db
    .updateTable('settlement_chain')
    .set({
      ...adopted,
      adopted_at: sql`now()`,
      adopted_by: 'operator',
      ...NOTHING_OBSERVED,
      updated_at: sql`now()`,
    })
    .where('id', '=', 'current')
    .execute();
}
