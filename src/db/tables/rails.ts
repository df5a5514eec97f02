import type { ColumnType } from 'kysely';

/** Table types of migrations/010_payer_rails.sql, owned by src/payments/rails; composed into Database. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/** The payer rails (docs/rails.md); the sandbox is the only one without a provider behind it. */
export const PROVIDER_RAIL_NAMES = ['paystack', 'mpesa'] as const;
export const RAIL_NAMES = ['sandbox', ...PROVIDER_RAIL_NAMES] as const;
export type RailName = (typeof RAIL_NAMES)[number];
export type ProviderRail = (typeof PROVIDER_RAIL_NAMES)[number];

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
