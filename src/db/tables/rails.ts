import type { ColumnType, Selectable } from 'kysely';

/** Table types of migrations/010_payer_rails.sql, owned by src/payments/rails; composed into Database. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export type RailName = 'sandbox' | 'paystack' | 'mpesa';
export type ProviderRail = Exclude<RailName, 'sandbox'>;

export interface RailCredentialsTable {
  account_id: string;
  livemode: boolean;
  rail: ProviderRail;
  /** json: what may be shown back (last four of a key, shortcode, environment). */
  settings: ColumnType<unknown, string, string>;
  secret_ciphertext: string;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export type RailEventKind = 'start' | 'callback' | 'verification' | 'refund';

export interface RailEventsTable {
  id: string;
  rail: RailName;
  attempt_id: string | null;
  payment_id: string | null;
  kind: RailEventKind;
  /** accepted, duplicate, refused_signature, refused_unknown, mismatch, unconfirmed, … (docs/rails.md). */
  verdict: string;
  detail: string;
  created_at: CreatedAt;
}

export interface RailTables {
  rail_credentials: RailCredentialsTable;
  rail_events: RailEventsTable;
}

export type RailCredentialsRow = Selectable<RailCredentialsTable>;
export type RailEventRow = Selectable<RailEventsTable>;
