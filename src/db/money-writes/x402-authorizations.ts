// An x402 authorization's writes that move money or decide a payment: its record before anything
// is submitted, its confirmation with the chain's facts, its failure. Made only in a system tool's
// run (tools/system/x402-authorizations.ts); the submission bookkeeping (submitted, its signed
// transactions) is the relayer's (src/settlement/authorizations.ts), its queries in
// src/db/repositories/x402-authorizations.ts and chain-transactions.ts.

import { sql } from 'kysely';
import type { Db } from '../database.ts';
import type { X402AuthorizationRow, X402AuthorizationsTable } from '../tables/x402.ts';
import type { Insertable } from 'kysely';

/** The authorization recorded; undefined when its (chain, token, payer, nonce) is already taken. */
export async function insertX402Authorization(
  db: Db,
  row: Insertable<X402AuthorizationsTable>,
): Promise<X402AuthorizationRow | undefined> {
  return await db
    .insertInto('x402_authorizations')
    .values(row)
    .onConflict((oc) => oc.columns(['chain_id', 'token', 'payer', 'nonce']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** An account's authorization, locked for the rest of the caller's transaction (the tools that move it take it first). */
export async function lockX402Authorization(db: Db, id: string, accountId: string): Promise<X402AuthorizationRow> {
  return db
    .selectFrom('x402_authorizations')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirstOrThrow();
}

export interface X402ChainFacts {
  chainKey: string;
  txHash: string;
  blockNumber: bigint;
  blockHash: string;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
  /** The in-process devnet cannot reorganise: final at once. */
  final: boolean;
}

/** recorded/submitted → confirmed with the chain's facts; undefined when it was no longer in flight. */
export async function markX402AuthorizationConfirmed(
  db: Db,
  id: string,
  facts: X402ChainFacts,
  at: Date,
): Promise<X402AuthorizationRow | undefined> {
  const row = await db
    .updateTable('x402_authorizations')
    .set({
      status: 'confirmed',
      chain_key: facts.chainKey,
      tx_hash: facts.txHash,
      block_number: facts.blockNumber,
      block_hash: facts.blockHash,
      gas_used: facts.gasUsed,
      effective_gas_price: facts.effectiveGasPrice,
      confirmed_at: at,
      finalized_at: facts.final ? at : null,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status', 'in', ['recorded', 'submitted'])
    .returningAll()
    .executeTakeFirst();
  if (row) {
    // Its transactions: the one mined, and the siblings at its nonce that can no longer be.
    await db
      .updateTable('chain_transactions')
      .set({
        status: sql`case when hash = ${facts.txHash} then 'mined' else 'replaced' end`,
        block_number: sql`case when hash = ${facts.txHash} then ${facts.blockNumber}::bigint else null end`,
        block_hash: sql`case when hash = ${facts.txHash} then ${facts.blockHash} else null end`,
        gas_used: sql`case when hash = ${facts.txHash} then ${facts.gasUsed}::bigint else null end`,
      })
      .where('authorization_id', '=', id)
      .where('status', 'in', ['signed', 'broadcast'])
      .execute();
  }
  return row;
}

/** recorded/submitted → failed (it can never land); undefined when it was no longer in flight. */
export async function markX402AuthorizationFailed(
  db: Db,
  id: string,
  failure: { reason: string; message: string },
  at: Date,
): Promise<X402AuthorizationRow | undefined> {
  const row = await db
    .updateTable('x402_authorizations')
    .set({ status: 'failed', failure_reason: failure.reason, failure_message: failure.message, updated_at: at })
    .where('id', '=', id)
    .where('status', 'in', ['recorded', 'submitted'])
    .returningAll()
    .executeTakeFirst();
  if (row) {
    await db
      .updateTable('chain_transactions')
      .set({ status: 'dropped', last_error: failure.message.slice(0, 500) })
      .where('authorization_id', '=', id)
      .where('status', 'in', ['signed', 'broadcast'])
      .execute();
  }
  return row;
}

/**
 * confirmed → submitted after a reorg took its transaction off the chain: the chain facts cleared,
 * the count of reversals raised, and its signed transactions live again (the same bytes are
 * broadcast again). Undefined when it was no longer confirmed by `txHash`.
 */
export async function markX402AuthorizationReverted(
  db: Db,
  id: string,
  txHash: string,
  at: Date,
): Promise<X402AuthorizationRow | undefined> {
  const row = await db
    .updateTable('x402_authorizations')
    .set((eb) => ({
      status: 'submitted',
      tx_hash: null,
      block_number: null,
      block_hash: null,
      gas_used: null,
      effective_gas_price: null,
      confirmed_at: null,
      finalized_at: null,
      reversals: eb('reversals', '+', 1),
      updated_at: at,
    }))
    .where('id', '=', id)
    .where('status', '=', 'confirmed')
    .where('tx_hash', '=', txHash)
    .returningAll()
    .executeTakeFirst();
  if (row) {
    await db
      .updateTable('chain_transactions')
      .set({ status: 'broadcast', block_number: null, block_hash: null, gas_used: null })
      .where('authorization_id', '=', id)
      .where('status', 'in', ['mined', 'replaced'])
      .execute();
  }
  return row;
}
