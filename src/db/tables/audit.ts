import type { ColumnType, Generated, Selectable } from 'kysely';

/**
 * Table types of migrations/016_verified_action_views.sql and 028_money_row_digests.sql, owned by
 * src/audit; composed into Database.
 */

export interface AuditVerificationsTable {
  account_id: string;
  verified_at: ColumnType<Date, Date | string, Date | string>;
  through_seq: bigint;
  ok: boolean;
  /** json text on write; parsed on read. */
  report: ColumnType<unknown, string, string>;
  /** The hash of the account's head at through_seq (null: recorded before migration 028). */
  through_hash: string | null;
}

/** Written only by the money tables' triggers (migration 028); append-only. */
export interface MoneyRowDigestsTable {
  seq: Generated<bigint>;
  table_name: string;
  row_id: string;
  account_id: string | null;
  livemode: boolean | null;
  /** null: the row was deleted. */
  digest: string | null;
  by_service: boolean;
  recorded_at: Generated<Date>;
}

export interface AuditTables {
  audit_verifications: AuditVerificationsTable;
  money_row_digests: MoneyRowDigestsTable;
}

export type AuditVerificationRow = Selectable<AuditVerificationsTable>;
