import type { ColumnType, Generated, Selectable } from 'kysely';

/**
 * Table types of the settlement migration (migrations/003_settlement.sql): the ledger, the
 * transfer queue, settlement batches, chains, relayer leases, nonces and signed transactions.
 * Owned by the settlement module; composed into Database in ../database.ts.
 */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** numeric(78,0): a decimal string (wei amounts can outgrow int8). */
type NullableWei = ColumnType<string | null, string | null | undefined, string | null>;

export type LedgerAccountKind = 'merchant' | 'treasury' | 'in_flight' | 'fees' | 'funding' | 'rail_clearing' | 'fx';
export type LedgerNormalSide = 'debit' | 'credit';

export interface LedgerAccountsTable {
  id: string;
  kind: LedgerAccountKind;
  asset: string;
  normal_side: LedgerNormalSide;
  account_id: string | null;
  livemode: boolean | null;
  chain_key: string | null;
  balance_minor: Generated<bigint>;
  created_at: CreatedAt;
}

export interface LedgerPostingsTable {
  id: Generated<bigint>;
  kind: string;
  reference: string;
  created_at: CreatedAt;
}

export interface LedgerEntriesTable {
  id: Generated<bigint>;
  posting_id: bigint;
  account_id: string;
  asset: string;
  /** Signed: debit > 0, credit < 0. */
  amount_minor: bigint;
}

export interface ChainsTable {
  chain_key: string;
  chain_id: number;
  genesis_hash: string | null;
  ephemeral: boolean;
  created_at: CreatedAt;
}

export interface RelayerLeasesTable {
  chain_key: string;
  relayer_address: string;
  holder: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  next_nonce: bigint;
  updated_at: UpdatedAt;
}

export type TransferKind = 'payment_settlement' | 'payout' | 'split_leg' | 'refund';
export type TransferStatus = 'queued' | 'batched' | 'sent' | 'confirmed' | 'failed';

export interface TransfersTable {
  id: string;
  kind: TransferKind;
  source_id: string;
  account_id: string;
  livemode: boolean;
  asset: string;
  recipient: string;
  amount_minor: bigint;
  from_ledger_account: string;
  status: TransferStatus;
  batch_id: string | null;
  attempts: Generated<number>;
  last_error: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  confirmed_at: NullableTimestamp;
  /** Migration 017: confirmations of this transfer undone by a reorg. */
  reversals: Generated<number>;
  /** Migration 020: a queued transfer waits until then (null: instant, sent by the batch window). */
  due_at: NullableTimestamp;
  /** Migration 020: due at once when the transfers waiting for its recipient add up to this. */
  threshold_minor: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
}

export type SettlementBatchStatus = 'planned' | 'sent' | 'confirmed' | 'failed';

export interface SettlementBatchesTable {
  id: string;
  batch_key: string;
  asset: string;
  status: SettlementBatchStatus;
  chain_key: string | null;
  /** json text on write; parsed on read. */
  lines: ColumnType<unknown, string, never>;
  total_minor: bigint;
  transfer_count: number;
  tx_hash: string | null;
  block_number: bigint | null;
  gas_used: bigint | null;
  effective_gas_price: bigint | null;
  gas_cost_wei: NullableWei;
  failure_reason: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  sent_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  /** Migration 017: the mined block's hash, re-checked until finalized_at (reorgs). */
  block_hash: string | null;
  finalized_at: NullableTimestamp;
  reorg_count: Generated<number>;
  /**
   * Migration 017: when the tracker first saw the batch's nonce used without a successful receipt of
   * its own (reverted, or taken by another transaction): it now only waits for the finality depth
   * before it is declared failed. Cleared when the nonce is free again or the batch goes back in flight.
   */
  nonce_used_at: NullableTimestamp;
}

export interface SettlementBatchTransfersTable {
  batch_id: string;
  transfer_id: string;
}

export interface RelayerNoncesTable {
  chain_key: string;
  relayer_address: string;
  nonce: bigint;
  /** Migration 031: a nonce belongs to one batch or one x402 authorization. */
  batch_id: string | null;
  authorization_id: ColumnType<string | null, string | null | undefined, never>;
  created_at: CreatedAt;
}

export type ChainTransactionStatus = 'signed' | 'broadcast' | 'mined' | 'reverted' | 'replaced' | 'dropped';

export interface ChainTransactionsTable {
  hash: string;
  chain_key: string;
  relayer_address: string;
  nonce: bigint;
  /** Migration 031: a transaction belongs to one batch or one x402 authorization. */
  batch_id: string | null;
  authorization_id: ColumnType<string | null, string | null | undefined, never>;
  raw_transaction: string;
  gas_limit: bigint;
  max_fee_per_gas: bigint;
  max_priority_fee_per_gas: bigint;
  status: ChainTransactionStatus;
  broadcast_count: Generated<number>;
  last_broadcast_at: NullableTimestamp;
  last_error: string | null;
  block_number: bigint | null;
  gas_used: bigint | null;
  effective_gas_price: bigint | null;
  created_at: CreatedAt;
  /** Migration 017. */
  block_hash: string | null;
}

/** Migration 017: zero-value self-transfers that refilled a nonce freed by a reorg. */
export interface RelayerNonceFillsTable {
  chain_key: string;
  relayer_address: string;
  nonce: bigint;
  hash: string;
  raw_transaction: string;
  created_at: CreatedAt;
}

/** Migration 017: the chain settlement signs for (one row, id 'current'), and another one a node served. */
export interface SettlementChainTable {
  id: 'current';
  chain_key: string;
  chain_id: number;
  genesis_hash: string;
  adopted_at: CreatedAt;
  adopted_by: 'first_use' | 'operator';
  observed_chain_key: string | null;
  observed_chain_id: number | null;
  observed_genesis_hash: string | null;
  observed_at: NullableTimestamp;
  updated_at: UpdatedAt;
}

export interface SettlementTables {
  ledger_accounts: LedgerAccountsTable;
  ledger_postings: LedgerPostingsTable;
  ledger_entries: LedgerEntriesTable;
  chains: ChainsTable;
  relayer_leases: RelayerLeasesTable;
  transfers: TransfersTable;
  settlement_batches: SettlementBatchesTable;
  settlement_batch_transfers: SettlementBatchTransfersTable;
  relayer_nonces: RelayerNoncesTable;
  chain_transactions: ChainTransactionsTable;
  relayer_nonce_fills: RelayerNonceFillsTable;
  settlement_chain: SettlementChainTable;
}

export type LedgerAccountRow = Selectable<LedgerAccountsTable>;
export type TransferRow = Selectable<TransfersTable>;
export type SettlementBatchRow = Selectable<SettlementBatchesTable>;
export type ChainTransactionRow = Selectable<ChainTransactionsTable>;
export type RelayerLeaseRow = Selectable<RelayerLeasesTable>;
export type ChainRow = Selectable<ChainsTable>;
