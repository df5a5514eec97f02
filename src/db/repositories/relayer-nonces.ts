// The relayer's nonces: who each one was handed out to (relayer_nonces: a settlement batch or an x402
// authorization, migration 031) and the zero-value transfers that refilled one no live transaction
// of ours may use (relayer_nonce_fills, migration 017). The queries of the relayer
// (src/settlement/relayer.ts), its nonce repair (nonces.ts) and the authorizations (authorizations.ts).

import type { Db } from '../database.ts';
import type { LeaseKey } from './relayer-leases.ts';

/** What a relayer nonce and its signed transactions pay: a settlement batch, or an x402 authorization (migration 031). */
export type NonceOwner = { batch_id: string } | { authorization_id: string };

/** The nonce handed out to `owner`, in the caller's transaction (the one that stores its signed transaction). */
export async function insertRelayerNonce(trx: Db, key: LeaseKey, nonce: bigint, owner: NonceOwner): Promise<void> {
  await trx
    .insertInto('relayer_nonces')
    .values({ chain_key: key.chainKey, relayer_address: key.relayer, nonce, ...owner })
    .execute();
}

/**
 * Whom this relayer handed `nonce` out to on this chain, with the status of its batch (of this
 * chain) or authorization; undefined for a nonce it never handed out.
 */
export async function findNonceOwner(db: Db, key: LeaseKey, nonce: bigint) {
  return await db
    .selectFrom('relayer_nonces as n')
    .leftJoin('settlement_batches as b', (join) =>
      join.onRef('b.id', '=', 'n.batch_id').on('b.chain_key', '=', key.chainKey),
    )
    .leftJoin('x402_authorizations as x', 'x.id', 'n.authorization_id')
    .select(['n.batch_id', 'b.id', 'b.status', 'n.authorization_id', 'x.status as authorization_status'])
    .where('n.chain_key', '=', key.chainKey)
    .where('n.relayer_address', '=', key.relayer)
    .where('n.nonce', '=', nonce)
    .executeTakeFirst();
}

/** How many nonces an authorization was given: how many times it was submitted. */
export async function countAuthorizationNonces(db: Db, authorizationId: string): Promise<number> {
  const row = await db
    .selectFrom('relayer_nonces')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('authorization_id', '=', authorizationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A stored refill of a nonce: its signed zero-value transfer. */
export interface NonceFill {
  chain_key: string;
  hash: string;
  raw_transaction: string;
}

/** The newest refill stored for `nonce` on this chain, if any. */
export async function newestNonceFill(db: Db, key: LeaseKey, nonce: bigint): Promise<NonceFill | undefined> {
  return await db
    .selectFrom('relayer_nonce_fills')
    .select(['chain_key', 'hash', 'raw_transaction'])
    .where('chain_key', '=', key.chainKey)
    .where('relayer_address', '=', key.relayer)
    .where('nonce', '=', nonce)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** A signed refill of `nonce`, stored (in the caller's transaction, under the lease) before its broadcast. */
export async function insertNonceFill(
  trx: Db,
  key: LeaseKey,
  nonce: bigint,
  signed: { hash: string; rawTransaction: string },
): Promise<NonceFill> {
  return await trx
    .insertInto('relayer_nonce_fills')
    .values({
      chain_key: key.chainKey,
      relayer_address: key.relayer,
      nonce,
      hash: signed.hash,
      raw_transaction: signed.rawTransaction,
    })
    .returning(['chain_key', 'hash', 'raw_transaction'])
    .executeTakeFirstOrThrow();
}
