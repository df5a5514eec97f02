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
}

/** The newest head of each account's chain an intact verification saw (migration 028). */
export interface AuditHeadsSeenTable {
  account_id: string;
  seq: bigint;
  hash: string;
  seen_at: ColumnType<Date, Date | string, Date | string>;
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
  audit_heads_seen: AuditHeadsSeenTable;
}

export type AuditVerificationRow = Selectable<AuditVerificationsTable>;
