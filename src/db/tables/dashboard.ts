import type { ColumnType, Selectable } from 'kysely';

/** Table types of migrations/006_dashboard.sql, owned by src/dashboard; composed into Database. */

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface DashboardSessionsTable {
  id_hash: string;
  account_id: string;
  key_id: string;
  livemode: boolean;
  csrf_token: string;
  created_at: ColumnType<Date, Date | string, never>;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface DashboardTables {
  dashboard_sessions: DashboardSessionsTable;
}

export type DashboardSessionRow = Selectable<DashboardSessionsTable>;
