import type { ColumnType, Generated } from 'kysely';

/**
 * Table types of the webhooks migrations (migrations/004_webhooks.sql, 015_webhook_endpoints.sql):
 * the account's endpoints, delivery state per event and target, and one row per delivery attempt.
 * Owned by the webhooks module; composed into Database in ../database.ts.
 */

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
export type AttemptTrigger = 'automatic' | 'redelivery';
export type AttemptOutcome = 'succeeded' | 'failed';

export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  livemode: boolean;
  url: string;
  /** Event types, or ['*'] for all. */
  enabled_events: string[];
  description: string | null;
  disabled: Generated<boolean>;
  secret_ciphertext: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  deleted_at: NullableTimestamp;
}

export interface EventDeliveriesTable {
  id: string;
  event_id: string;
  /** The account endpoint it goes to; null: the payment's webhook_url. */
  endpoint_id: string | null;
  account_id: string;
  livemode: boolean;
  status: Generated<DeliveryStatus>;
  attempt_count: Generated<number>;
  round_attempts: Generated<number>;
  next_attempt_at: Timestamp;
  leased_attempt_id: string | null;
  redelivery_requested: Generated<boolean>;
  last_attempt_at: NullableTimestamp;
  delivered_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface WebhookAttemptsTable {
  id: string;
  event_id: string;
  delivery_id: string;
  attempt_number: number;
  trigger: AttemptTrigger;
  url: string;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
  outcome: AttemptOutcome | null;
  response_status: number | null;
  latency_ms: number | null;
  response_excerpt: string | null;
  error_code: string | null;
  error_message: string | null;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  event_deliveries: EventDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
