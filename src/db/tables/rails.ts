import type { ColumnType } from 'kysely';

/** Table types of migrations/010_payer_rails.sql and 023_operator_collection.sql, owned by src/payments/rails; composed into Database. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/** The payer rails (docs/rails.md); the sandbox is the only one without a provider behind it. */
export const PROVIDER_RAIL_NAMES = ['paystack', 'mpesa'] as const;
export const RAIL_NAMES = ['sandbox', ...PROVIDER_RAIL_NAMES] as const;
export type RailName = (typeof RAIL_NAMES)[number];
export type ProviderRail = (typeof PROVIDER_RAIL_NAMES)[number];

/** Who set a collection account (migrations/023_operator_collection.sql). */
export type CollectionOwner = 'operator' | 'merchant';

/**
 * A provider integration that collects payers' money (docs/rails.md, "Who collects"): the
 * operator's, instance-wide (account_id null) or for one account; or a merchant's own from before
 * collection became the operator's, which collects nothing.
 */
export interface CollectionAccountsTable {
  id: string;
  rail: ProviderRail;
  livemode: boolean;
  account_id: string | null;
  owner: CollectionOwner;
  /** json: what may be shown back (last four of a key, shortcode, environment). */
  settings: ColumnType<unknown, string, string>;
  secret_ciphertext: string;
  /** json array of currency codes the provider refused for this integration. */
  refused_currencies: ColumnType<unknown, string | undefined, string>;
  created_at: CreatedAt;
  updated_at: Timestamp;
  retired_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
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
  collection_accounts: CollectionAccountsTable;
  rail_events: RailEventsTable;
}
