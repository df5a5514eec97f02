// Which chain the relayer is talking to, as the database knows it. Chain-side state (nonces, signed
// transactions, the treasury ledger account) is keyed by it, so that a fresh in-process devnet never
// inherits the nonces of the previous one while PGlite persists across restarts.

import { randomUUID } from 'node:crypto';
import type { Address } from 'viem';
import { type ChainConnection, readTreasuryBalance } from '../chain/chain.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { DuplicatePostingError, type LedgerAccountRef, ledgerAccount } from '../ledger/ledger.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { hasTreasuryOpening } from '../db/repositories/ledger-postings.ts';
import type { LeaseKey } from '../db/repositories/relayer-leases.ts';
import { recordChain } from '../db/repositories/settlement-chain.ts';
import { recordTreasuryOpening } from '../../tools/system/record-treasury-opening.ts';

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

/** The relayer lease's key on this chain: one signer per chain and relayer key. */
export function leaseKey(session: Pick<ChainSession, 'key' | 'relayer'>): LeaseKey {
  return { chainKey: session.key, relayer: session.relayer };
}

/** What a node says it serves: its chain id and genesis block. Remote nodes only. */
export interface ChainIdentity {
  /** `<chain id>:<genesis hash>`. */
  key: string;
  chainId: number;
  genesisHash: string;
}

/**
 * Asks the node which chain it serves now (two calls). A node behind one URL can be replaced by one
 * serving another chain (restarted with a new genesis, or re-pointed): nothing cached answers that.
 */
export async function identifyChain(conn: ChainConnection): Promise<ChainIdentity> {
  const [chainId, genesis] = await Promise.all([
    conn.publicClient.getChainId(),
    conn.publicClient.getBlock({ blockNumber: 0n }),
  ]);
  return { key: `${chainId}:${genesis.hash}`, chainId, genesisHash: genesis.hash };
}

/** The embedded devnet is the only connection with mine(); its chain exists in this process only. */
export function isEphemeralChain(conn: ChainConnection): boolean {
  return conn.mine !== undefined;
}

// Per connection, one session per chain it was seen to serve (a remote node can change chain).
const sessions = new WeakMap<ChainConnection, Map<string, Promise<ChainSession>>>();
const EPHEMERAL = 'ephemeral';

/**
 * The session for a connection and the chain it serves, registered in the database on first use
 * (with the treasury's opening balance posted to the ledger the first time this treasury is seen).
 * For a remote node the chain is `identity` when given, else asked now. Cached per connection and
 * chain; a failure is not cached, so the next call tries again.
 */
export async function openChainSession(
  env: ToolEnvironment,
  conn: ChainConnection,
  identity?: ChainIdentity,
): Promise<ChainSession> {
  const ephemeral = isEphemeralChain(conn);
  const chain = ephemeral ? undefined : (identity ?? (await identifyChain(conn)));
  const cacheKey = chain?.key ?? EPHEMERAL;
  let byChain = sessions.get(conn);
  if (!byChain) {
    byChain = new Map();
    sessions.set(conn, byChain);
  }
  let session = byChain.get(cacheKey);
  if (!session) {
    const opening = registerChain(env, conn, chain);
    session = opening;
    byChain.set(cacheKey, opening);
    opening.catch(() => {
      if (byChain.get(cacheKey) === opening) byChain.delete(cacheKey);
    });
  }
  return session;
}

async function registerChain(
  env: ToolEnvironment,
  conn: ChainConnection,
  identity: ChainIdentity | undefined,
): Promise<ChainSession> {
  const ephemeral = identity === undefined;
  const key = identity?.key ?? `devnet:${conn.chainId}:${randomUUID()}`;
  const genesisHash = identity?.genesisHash ?? null;
  const asset = SETTLEMENT_CURRENCY.code;
  const treasury = ledgerAccount.treasury(key, conn.batchAddress, asset);
  const session: ChainSession = {
    conn,
    key,
    chainId: identity?.chainId ?? conn.chainId,
    ephemeral,
    relayer: conn.relayer.address,
    asset,
    treasury,
  };

  const { db } = env;
  await recordChain(db, {
    chain_key: key,
    chain_id: identity?.chainId ?? conn.chainId,
    genesis_hash: genesisHash,
    ephemeral,
  });
  if (!(await hasTreasuryOpening(db, treasury.id))) {
    // First sight of this treasury: nothing of ours can be in flight on it yet (batches are only
    // sent after this), so its balance now is what the operator funded it with.
    const balance = await readTreasuryBalance(conn);
    try {
      await runSystemTool(env, recordTreasuryOpening, {
        chain_key: key,
        batch_address: conn.batchAddress,
        asset,
        balance_minor: balance.toString(),
      });
    } catch (error) {
      // Another worker recorded it first: same treasury, same opening balance.
      if (!(error instanceof DuplicatePostingError)) throw error;
    }
  }
  return session;
}
