import type { Db } from '../database.ts';
import type { X402AuthorizationRow } from '../tables/x402.ts';

// Reads of x402 authorizations for the payers' side (src/x402/settle.ts, the checkout's wallet
// form). They are written by the system tools (src/db/money-writes/x402-authorizations.ts).

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
