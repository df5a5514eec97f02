import type { ColumnType, Generated, Selectable } from 'kysely';

/** Table types of migrations/005_money_movement.sql. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** A json column: written as JSON text, read back parsed. */
type Json = ColumnType<unknown, string, string>;
type NullableJson = ColumnType<unknown, string | null | undefined, string | null>;

export interface PayoutsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  revenue_share_id: string | null;
  amount_minor: bigint;
  asset: string;
  to_address: string;
  reference: string | null;
  memo: string | null;
  status: 'queued' | 'settled' | 'failed';
  transfer_id: string | null;
  channel: string;
  chain_id: number | null;
  tx_hash: string | null;
  gas_used: bigint | null;
  gas_cost_wei: string | null;
  failure_reason: string | null;
  created_at: CreatedAt;
  settled_at: NullableTimestamp;
  failed_at: NullableTimestamp;
}

export interface RevenueSharesTable {
  id: string;
  account_id: string;
  livemode: boolean;
  payment_id: string | null;
  amount_minor: bigint;
  asset: string;
  reference: string | null;
  channel: string;
  created_at: CreatedAt;
}

export interface RefundsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  payment_id: string;
  amount_minor: bigint;
  currency: string;
  merchant_debit_minor: bigint;
  fee_return_minor: bigint;
  reason: string | null;
  rail: string;
  /** pending: a provider rail still has to pay the payer (migrations/011_rail_refunds.sql). */
  status: 'pending' | 'succeeded' | 'failed';
  channel: string;
  provider_reference: string | null;
  /** The provider's own word for where it stands (Paystack's refund statuses; migrations/024). */
  provider_status: string | null;
  failure_reason: string | null;
  submitted_at: NullableTimestamp;
  checked_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface PolicySpendTable {
  id: Generated<bigint>;
  account_id: string;
  livemode: boolean;
  channel: string;
  tool: string;
  object_id: string;
  amount_settlement_minor: bigint;
  created_at: CreatedAt;
}

export interface PoliciesTable {
  account_id: string;
  livemode: boolean;
  version: number;
  policy: Json;
  updated_by_key: string | null;
  created_at: CreatedAt;
}

export type ConfirmationStatus = 'pending' | 'executed' | 'rejected' | 'expired';

export interface ConfirmationsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  tool: string;
  channel: string;
  input: Json;
  input_hash: string;
  summary: string;
  decision: Json;
  requested_by_key: string | null;
  run_id: string | null;
  status: ConfirmationStatus;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  decided_by_key: string | null;
  decided_at: NullableTimestamp;
  result: NullableJson;
  created_at: CreatedAt;
}

export type AgentRunStatus =
  | 'running'
  | 'completed'
  | 'confirmation_required'
  | 'rejected'
  | 'failed'
  /** Asked the merchant back and waits for the answer in the same run (migration 029). */
  | 'needs_input'
  /** The merchant answered a question with no/cancel: nothing moved. */
  | 'cancelled'
  /** A question nobody answered in time: nothing moved. */
  | 'expired';

export interface AgentRunsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  channel: string;
  key_id: string | null;
  instruction: string;
  model: string;
  dry_run: boolean;
  idempotency_key: string | null;
  status: AgentRunStatus;
  reply: string;
  steps: Generated<number>;
  usage: NullableJson;
  created_at: CreatedAt;
  finished_at: NullableTimestamp;
  /** While the run waits for the merchant's answer: when it lapses (migration 029). */
  answer_by: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** A turn of a run's conversation after its first instruction (migration 029). */
export interface AgentRunMessagesTable {
  run_id: string;
  seq: number;
  account_id: string;
  livemode: boolean;
  role: 'agent' | 'merchant';
  text: string;
  /** An agent question's proposed calls, [{ tool, input }]; null for a merchant reply. */
  proposed: NullableJson;
  idempotency_key: string | null;
  created_at: CreatedAt;
}

export type ActionDecision = 'allow' | 'require_confirmation' | 'deny' | 'not_checked';
export type ActionStatus = 'executed' | 'held' | 'denied' | 'failed' | 'rejected' | 'planned';

export interface AgentActionsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  run_id: string | null;
  channel: string;
  key_id: string | null;
  tool: string;
  input: Json;
  decision: ActionDecision;
  reasons: Json;
  status: ActionStatus;
  result: NullableJson;
  error: NullableJson;
  confirmation_id: string | null;
  approved_by_key: string | null;
  object_id: string | null;
  /** What a money action moves, in settlement minor units, as the policy judged it (migration 008). */
  amount_settlement_minor: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ActionLogTable {
  seq: Generated<bigint>;
  account_id: string;
  livemode: boolean;
  entry_type: string;
  run_id: string | null;
  action_id: string | null;
  payload: Json;
  prev_hash: string;
  hash: string;
  created_at: ColumnType<Date, Date | string, never>;
}

export interface ActionLogHeadsTable {
  account_id: string;
  last_seq: bigint;
  last_hash: string;
}

export interface MoneyTables {
  payouts: PayoutsTable;
  revenue_shares: RevenueSharesTable;
  refunds: RefundsTable;
  policy_spend: PolicySpendTable;
  policies: PoliciesTable;
  confirmations: ConfirmationsTable;
  agent_runs: AgentRunsTable;
  agent_run_messages: AgentRunMessagesTable;
  agent_actions: AgentActionsTable;
  action_log: ActionLogTable;
  action_log_heads: ActionLogHeadsTable;
}

export type PayoutRow = Selectable<PayoutsTable>;
export type RefundRow = Selectable<RefundsTable>;
export type RevenueShareRow = Selectable<RevenueSharesTable>;
export type ConfirmationRow = Selectable<ConfirmationsTable>;
export type AgentRunRow = Selectable<AgentRunsTable>;
export type AgentRunMessageRow = Selectable<AgentRunMessagesTable>;
export type AgentActionRow = Selectable<AgentActionsTable>;
export type ActionLogRow = Selectable<ActionLogTable>;
