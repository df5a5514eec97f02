// x402 authorizations as the settlement worker's relayer follows them (src/settlement/authorizations.ts):
// which to submit, follow and watch, and the submission's bookkeeping (submitted, recorded again,
// mined again in another block, final), which moves no money, as a batch's `sent` does not. The
// writes that move money or decide a payment (recorded, confirmed, failed, reverted) are in
// src/db/money-writes/x402-authorizations.ts, made only in a system tool's run. Below them, the
// payers' side's reads (src/x402/settle.ts, the checkout's wallet form).

import { sql } from 'kysely';
import type { Db } from '../database.ts';
import type { X402AuthorizationRow, X402AuthorizationStatus } from '../tables/x402.ts';

/** The chain and token the relayer pays in on: its authorizations, and the chain key it signs for. */
export interface AuthorizationChain {
  chainId: number;
  /** The token's address, lower case (as stored). */
  token: string;
  chainKey: string;
}

/** Authorizations of this chain and token, oldest first. */
function ofChain(db: Db, chain: AuthorizationChain) {
  return db
    .selectFrom('x402_authorizations')
    .selectAll()
    .where('chain_id', '=', chain.chainId)
    .where('token', '=', chain.token)
    .orderBy('created_at')
    .orderBy('id');
}

/** Recorded authorizations of this chain and token, oldest first, up to `limit`: to submit. */
export async function recordedAuthorizations(
  db: Db,
  chain: AuthorizationChain,
  limit: number,
): Promise<X402AuthorizationRow[]> {
  return await ofChain(db, chain).where('status', '=', 'recorded').limit(limit).execute();
}

/** Authorizations submitted on this chain, oldest first: to follow to their end. */
export async function submittedAuthorizations(db: Db, chain: AuthorizationChain): Promise<X402AuthorizationRow[]> {
  return await ofChain(db, chain).where('status', '=', 'submitted').where('chain_key', '=', chain.chainKey).execute();
}

/** Authorizations confirmed on this chain and not final yet, oldest first, up to 1,000: the reorg watch's. */
export async function confirmedAuthorizationsNotFinal(
  db: Db,
  chain: AuthorizationChain,
): Promise<X402AuthorizationRow[]> {
  return await ofChain(db, chain)
    .where('status', '=', 'confirmed')
    .where('finalized_at', 'is', null)
    .where('chain_key', '=', chain.chainKey)
    .limit(1_000)
    .execute();
}

/** An authorization's status now, read without a lock. */
export async function findAuthorizationStatus(db: Db, id: string): Promise<X402AuthorizationStatus | undefined> {
  const row = await db.selectFrom('x402_authorizations').select('status').where('id', '=', id).executeTakeFirst();
  return row?.status;
}

/** An authorization's status, its row locked for the caller's transaction (the one that signs for it or moves it on). */
export async function lockAuthorizationStatus(trx: Db, id: string): Promise<X402AuthorizationStatus | undefined> {
  const row = await trx
    .selectFrom('x402_authorizations')
    .select('status')
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  return row?.status;
}

/** Submitted on this chain: its signed transaction is stored, in the caller's transaction. */
export async function markAuthorizationSubmitted(trx: Db, id: string, chainKey: string): Promise<void> {
  await trx
    .updateTable('x402_authorizations')
    .set({ status: 'submitted', chain_key: chainKey, submitted_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', id)
    .execute();
}

/** Recorded again, to be submitted afresh: its transaction can no longer carry it (caller's transaction, row locked). */
export async function markAuthorizationRecordedAgain(trx: Db, id: string): Promise<void> {
  await trx
    .updateTable('x402_authorizations')
    .set({ status: 'recorded', updated_at: sql`now()` })
    .where('id', '=', id)
    .execute();
}

/**
 * Authorizations submitted on an in-process devnet that is gone: an ephemeral chain other than the
 * current one on which no lease is live (its process ended).
 */
export async function submittedAuthorizationsOnGoneDevnets(db: Db, currentChainKey: string): Promise<{ id: string }[]> {
  return await db
    .selectFrom('x402_authorizations as x')
    .innerJoin('chains as c', 'c.chain_key', 'x.chain_key')
    .select('x.id')
    .where('x.status', '=', 'submitted')
    .where('x.chain_key', '!=', currentChainKey)
    .where('c.ephemeral', '=', true)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('relayer_leases as l')
            .select('l.chain_key')
            .whereRef('l.chain_key', '=', 'x.chain_key')
            .where('l.expires_at', '>', sql<Date>`now()`),
        ),
      ),
    )
    .execute();
}

/** A confirmed authorization's transaction mined again in another block, deep enough: only its block changes. */
export async function recordAuthorizationBlock(
  db: Db,
  id: string,
  block: { number: bigint; hash: string },
): Promise<void> {
  await db
    .updateTable('x402_authorizations')
    .set({ block_number: block.number, block_hash: block.hash, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', 'confirmed')
    .execute();
}

/** A confirmed authorization deep enough to be final: the reorg watch lets it go. */
export async function markAuthorizationFinal(db: Db, id: string): Promise<void> {
  await db
    .updateTable('x402_authorizations')
    .set({ finalized_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', 'confirmed')
    .where('finalized_at', 'is', null)
    .execute();
}

/** The token's key of an authorization: it pays once, whoever offers it. */
export interface X402AuthorizationKey {
  chainId: number;
  token: string;
  payer: string;
  nonce: string;
}

/** The authorization recorded under this key, if any. */
export async function findX402AuthorizationByKey(
  db: Db,
  key: X402AuthorizationKey,
): Promise<X402AuthorizationRow | undefined> {
  return await db
    .selectFrom('x402_authorizations')
    .selectAll()
    .where('chain_id', '=', key.chainId)
    .where('token', '=', key.token)
    .where('payer', '=', key.payer)
    .where('nonce', '=', key.nonce)
    .executeTakeFirst();
}

/** An authorization by its id (it exists: the caller recorded it). */
export async function findX402AuthorizationById(db: Db, id: string): Promise<X402AuthorizationRow> {
  return await db.selectFrom('x402_authorizations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** The payment attempt recorded for a payment's authorization by this payer and nonce (lowercase hex). */
export async function findX402AuthorizationAttemptId(
  db: Db,
  paymentId: string,
  payer: string,
  nonce: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('x402_authorizations')
    .select('attempt_id')
    .where('payment_id', '=', paymentId)
    .where('payer', '=', payer)
    .where('nonce', '=', nonce)
    .executeTakeFirst();
  return row?.attempt_id;
}

/** Of these payments, those paid by an x402 authorization confirmed on chain (one statement: keep the list short). */
export async function listPaymentsWithConfirmedAuthorization(
  db: Db,
  paymentIds: readonly string[],
): Promise<{ payment_id: string }[]> {
  return db
    .selectFrom('x402_authorizations')
    .select('payment_id')
    .where('payment_id', 'in', paymentIds)
    .where('status', '=', 'confirmed')
    .execute();
}

/**
 * Takes the transaction's advisory lock on an authorization's key as text (chain:token:payer:nonce,
 * record_x402_authorization's), held until it ends: one recorder per key at a time, so a
 * concurrent settle of the same payload waits here, then finds the first one's row.
 */
export async function lockX402AuthorizationKey(db: Db, keyText: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${keyText}, 0))`.execute(db);
}
