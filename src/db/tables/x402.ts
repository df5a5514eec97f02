import type { ColumnType, Generated, Selectable } from 'kysely';

/** Table types of migrations/031_x402_authorizations.sql, owned by src/x402 and src/settlement/authorizations.ts; composed into Database. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** The payer rail of USDC paid in from the payer's own wallet (an EIP-3009 authorization). */
export const USDC_RAIL = 'usdc';

export type X402AuthorizationStatus = 'recorded' | 'submitted' | 'confirmed' | 'failed';

export interface X402AuthorizationsTable {
  id: string;
  chain_id: number;
  /** Lower-case 0x addresses and nonce, so the unique key compares as the token does. */
  token: string;
  payer: string;
  nonce: string;
  account_id: string;
  livemode: boolean;
  payment_id: string;
  attempt_id: string;
  pay_to: string;
  value_minor: bigint;
  valid_after: bigint;
  valid_before: bigint;
  signature: string;
  request_hash: string;
  resource: ColumnType<unknown, string | null, string | null>;
  status: X402AuthorizationStatus;
  chain_key: string | null;
  tx_hash: string | null;
  block_number: bigint | null;
  block_hash: string | null;
  gas_used: bigint | null;
  effective_gas_price: bigint | null;
  failure_reason: string | null;
  failure_message: string | null;
  reversals: Generated<number>;
  submitted_at: NullableTimestamp;
  confirmed_at: NullableTimestamp;
  finalized_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface X402Tables {
  x402_authorizations: X402AuthorizationsTable;
}

export type X402AuthorizationRow = Selectable<X402AuthorizationsTable>;
