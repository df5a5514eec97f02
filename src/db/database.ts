import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { AuditTables } from './tables/audit.ts';
import type { DashboardTables } from './tables/dashboard.ts';
import type { MoneyTables } from './tables/money.ts';
import type { SettlementTables } from './tables/settlement.ts';
import type { WebhookTables } from './tables/webhooks.ts';
import type { RailTables } from './tables/rails.ts';
import type { ReconciliationTables } from './tables/reconciliation.ts';
import type { X402Tables } from './tables/x402.ts';
import type { EventType } from '../webhooks/event-types.ts';

/**
 * Table types, one interface per table in migrations/. Repositories derive their row types
 * from these (STYLE.md 6). int8 columns are bigint on both backends (connect.ts).
 */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface AccountsTable {
  id: string;
  name: string;
  fee_bps: Generated<number>;
  default_payout_address: string | null;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  livemode: boolean;
  display_prefix: string;
  last4: string;
  secret_hash: string;
  scopes: string[];
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  rotated_from: string | null;
  /** The key that created it (null: the operator's CLI or account creation). Migration 014. */
  created_by_key: ColumnType<string | null, string | null | undefined, never>;
  /** An assistant's key: judged by the mcp channel's limits on every channel. Migration 027. */
  assistant: ColumnType<boolean, boolean | undefined, never>;
}

export interface WebhookSecretsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  secret_ciphertext: string;
  created_at: CreatedAt;
  expires_at: NullableTimestamp;
}

export type PaymentStatusValue =
  | 'pending'
  | 'processing'
  | 'paid'
  | 'settling'
  | 'settled'
  | 'expired'
  | 'refunded'
  | 'partially_refunded';

/** When a paid payment's on-chain transfer goes out (docs/settlement.md, "Schedules"). */
export type SettlementSchedule = 'instant' | 'hourly' | 'daily' | 'threshold';

export interface SettlementSchedulesTable {
  account_id: string;
  livemode: boolean;
  schedule: SettlementSchedule;
  threshold_minor: bigint | null;
  updated_by_key: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface PaymentsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  status: PaymentStatusValue;
  amount_minor: bigint;
  currency: string;
  redirect_url: string;
  reference: string | null;
  merchant_name: string | null;
  description: string | null;
  webhook_url: string | null;
  payout_address: string | null;
  /** Stored as json text; written as a JSON string, read back parsed. */
  metadata: ColumnType<unknown, string | null, string | null>;
  creation_hash: string;
  expires_at: Timestamp;
  quote_rate: string;
  quote_source: string;
  fee_bps: number;
  settlement_asset: string;
  gross_settlement_minor: bigint;
  fee_minor: bigint;
  settlement_minor: bigint;
  settlement_destination: 'address' | 'balance' | null;
  settlement_address: string | null;
  settlement_tx_hash: string | null;
  settlement_chain_id: number | null;
  settlement_gas_used: bigint | null;
  /** numeric: a decimal string. */
  settlement_gas_cost_wei: string | null;
  refunded_minor: Generated<bigint>;
  /** Migration 020: given at creation, else the account's (filled in by a trigger). */
  settlement_schedule: ColumnType<SettlementSchedule, SettlementSchedule | null | undefined, SettlementSchedule>;
  settlement_threshold_minor: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  settlement_due_at: NullableTimestamp;
  paid_at: NullableTimestamp;
  settled_at: NullableTimestamp;
  expired_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export type AttemptOutcome =
  | 'pending'
  | 'unknown'
  | 'succeeded'
  | 'declined'
  | 'abandoned'
  | 'cancelled'
  | 'timed_out'
  | 'failed'
  | 'flagged';

/**
 * The outcomes of an attempt still open (docs/rails.md): `pending`, waiting on the payer or the
 * provider; `unknown`, the provider's answer was lost, timed out or came back 5xx, so it may have
 * acted: asked about until it says what happened, and the payer is not invited to pay again meanwhile.
 */
export const OPEN_ATTEMPT_OUTCOMES = ['pending', 'unknown'] as const satisfies readonly AttemptOutcome[];

export function isOpenAttempt(outcome: AttemptOutcome): boolean {
  return (OPEN_ATTEMPT_OUTCOMES as readonly AttemptOutcome[]).includes(outcome);
}

export interface PaymentAttemptsTable {
  id: string;
  payment_id: string;
  rail: string;
  outcome: AttemptOutcome;
  failure_reason: string | null;
  amount_minor: bigint | null;
  currency: string | null;
  provider_reference: string | null;
  provider_receipt: string | null;
  payer_url: string | null;
  payer_hint: string | null;
  callback_token_hash: string | null;
  /** The collection account the payer paid into (provider rails; null for the sandbox). */
  collection_id: string | null;
  /**
   * What the payer paid on top of what was asked, which the provider kept (Paystack's fees passed
   * to the customer); null when none was reported. Never the merchant's (migrations/024).
   */
  payer_fee_minor: bigint | null;
  /**
   * When a signed success event arrived that the provider's API has not confirmed yet: the
   * reconciler re-verifies the attempt until it does, ended or not (migrations/024).
   */
  unconfirmed_event_at: NullableTimestamp;
  late: Generated<boolean>;
  refund_status: 'due' | 'refunded' | 'manual' | null;
  checked_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface EventsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  /** One of the closed catalogue (src/webhooks/event-types.ts): every writer names one. */
  type: EventType;
  object_id: string | null;
  data: ColumnType<unknown, string, never>;
  webhook_url: string | null;
  created_at: CreatedAt;
}

export interface IdempotencyKeysTable {
  account_id: string;
  livemode: boolean;
  key: string;
  tool: string;
  request_hash: string;
  response: ColumnType<unknown, string, string>;
  created_at: CreatedAt;
}

export interface Database
  extends SettlementTables,
    WebhookTables,
    MoneyTables,
    DashboardTables,
    RailTables,
    ReconciliationTables,
    X402Tables,
    AuditTables {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  webhook_secrets: WebhookSecretsTable;
  payments: PaymentsTable;
  payment_attempts: PaymentAttemptsTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  settlement_schedules: SettlementSchedulesTable;
}

/** A handle a repository accepts: the database or a transaction the caller owns. */
export type Db = Kysely<Database> | Transaction<Database>;

/** One account's objects of one mode: what a key (or a dashboard session) sees and changes. */
export interface ModeScope {
  accountId: string;
  livemode: boolean;
}

export type Account = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
export type ApiKeyUpdate = Updateable<ApiKeysTable>;
export type PaymentRow = Selectable<PaymentsTable>;
export type NewPayment = Insertable<PaymentsTable>;
export type EventRow = Selectable<EventsTable>;
