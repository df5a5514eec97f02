import type { ColumnType, Selectable } from 'kysely';

/** Table types of migrations/016_verified_action_views.sql, owned by src/audit; composed into Database. */

export interface AuditVerificationsTable {
  account_id: string;
  verified_at: ColumnType<Date, Date | string, Date | string>;
  through_seq: bigint;
  ok: boolean;
  /** json text on write; parsed on read. */
  report: ColumnType<unknown, string, string>;
}

export interface AuditTables {
  audit_verifications: AuditVerificationsTable;
}

export type AuditVerificationRow = Selectable<AuditVerificationsTable>;
