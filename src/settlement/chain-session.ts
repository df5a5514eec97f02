// Which chain the relayer is talking to, as the database knows it. Chain-side state (nonces, signed
// transactions, the treasury ledger account) is keyed by it, so that a fresh in-process devnet never
// inherits the nonces of the previous one while PGlite persists across restarts.

import { randomUUID } from 'node:crypto';
import type { Address } from 'viem';
import { type ChainConnection, readTreasuryBalance } from '../chain/chain.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import {
  credit,
  debit,
  DuplicatePostingError,
  type LedgerAccountRef,
  ledgerAccount,
  postLedger,
} from '../ledger/ledger.ts';

export interface ChainSession {
  conn: ChainConnection;
  /** `<chain id>:<genesis hash>` for a node over RPC; `devnet:<chain id>:<uuid>` per in-process devnet. */
  key: string;
  chainId: number;
  /** The in-process devnet: its chain ends with this process. */
  ephemeral: boolean;
  relayer: Address;
  /** The settlement asset the token pays (USDC minor units). */
  asset: string;
  /** Ledger account of the tokens held by the batch contract on this chain. */
  treasury: LedgerAccountRef;
}

const sessions = new WeakMap<ChainConnection, Promise<ChainSession>>();

/**
 * The session for a connection, registered in the database on first use (with the treasury's
 * opening balance posted to the ledger the first time this treasury is seen). Cached per
 * connection; a failure is not cached, so the next call tries again.
 */
export function openChainSession(db: Kysely<Database>, conn: ChainConnection): Promise<ChainSession> {
  let session = sessions.get(conn);
  if (!session) {
    session = registerChain(db, conn);
    sessions.set(conn, session);
    session.catch(() => sessions.delete(conn));
  }
  return session;
}

async function registerChain(db: Kysely<Database>, conn: ChainConnection): Promise<ChainSession> {
  // The embedded devnet is the only connection with mine(); its chain exists in this process only.
  const ephemeral = conn.mine !== undefined;
  let key: string;
  let genesisHash: string | null = null;
  if (ephemeral) {
    key = `devnet:${conn.chainId}:${randomUUID()}`;
  } else {
    const genesis = await conn.publicClient.getBlock({ blockNumber: 0n });
    genesisHash = genesis.hash;
    key = `${conn.chainId}:${genesis.hash}`;
  }
  const asset = SETTLEMENT_CURRENCY.code;
  const treasury = ledgerAccount.treasury(key, conn.batchAddress, asset);
  const session: ChainSession = {
    conn,
    key,
    chainId: conn.chainId,
    ephemeral,
    relayer: conn.relayer.address,
    asset,
    treasury,
  };

  await db
    .insertInto('chains')
    .values({ chain_key: key, chain_id: conn.chainId, genesis_hash: genesisHash, ephemeral })
    .onConflict((oc) => oc.column('chain_key').doNothing())
    .execute();

  const opened = await db
    .selectFrom('ledger_postings')
    .select('id')
    .where('kind', '=', 'treasury_opening')
    .where('reference', '=', treasury.id)
    .executeTakeFirst();
  if (!opened) {
    // First sight of this treasury: nothing of ours can be in flight on it yet (batches are only
    // sent after this), so its balance now is what the operator funded it with.
    const balance = await readTreasuryBalance(conn);
    try {
      await db.transaction().execute((trx) =>
        postLedger(trx, {
          kind: 'treasury_opening',
          reference: treasury.id,
          entries: [debit(treasury, balance), credit(ledgerAccount.funding(key, asset), balance)],
        }),
      );
    } catch (error) {
      // Another worker recorded it first: same treasury, same opening balance.
      if (!(error instanceof DuplicatePostingError)) throw error;
    }
  }
  return session;
}
