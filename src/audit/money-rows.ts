import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { MONEY_TABLES, type MoneyTable } from './money-tables.ts';
import type { BrokenRow } from './view-check.ts';

/**
 * The money rows themselves, against the digests their tables' triggers recorded
 * (migrations/028_money_row_digests.sql): each write to a money row records sha256 of the row, in
 * the transaction of the write, and whether a plainpay session made it. Verification recomputes each
 * current row's digest in the database (the same sha256 of its JSON text) and compares it with the newest one
 * recorded for it:
 *   - a row whose digest differs was edited with the trigger disabled;
 *   - a recorded row that is gone was deleted; a row no digest records was added;
 *   - a row any of whose digests a session other than plainpay's wrote was changed outside plainpay.
 * The digests are append-only like the action log; a writer able to drop that guard too could
 * rewrite a row and its digests alike, which a checkpoint kept outside the database and the
 * recorded verifications of the chain do not see: docs/operations.md says what verify covers.
 */
interface Finding {
  row_id: string;
  current: string | null;
  recorded: string | null;
  seq: bigint | null;
  by_service: boolean | null;
  account_id: string | null;
  livemode: boolean | null;
}

/** The rows of `table` in scope, with their merchant and mode, as SQL the check reads from. */
function currentRows(table: MoneyTable, accountId: string | undefined) {
  if (table === 'ledger_entries') {
    return sql`select t.id::text as row_id, money_row_digest(t) as digest, la.account_id, la.livemode
      from ledger_entries t join ledger_accounts la on la.id = t.account_id
      ${accountId === undefined ? sql`` : sql`where la.account_id = ${accountId}`}`;
  }
  if (table === 'settlement_batches') {
    // The service's own rows: an account's verification does not see them.
    return sql`select t.id as row_id, money_row_digest(t) as digest, null::text as account_id, null::boolean as livemode
      from settlement_batches t ${accountId === undefined ? sql`` : sql`where false`}`;
  }
  return sql`select t.id as row_id, money_row_digest(t) as digest, t.account_id, t.livemode
    from ${sql.table(table)} t ${accountId === undefined ? sql`` : sql`where t.account_id = ${accountId}`}`;
}

/** Compares one table's rows in scope with their newest digests; the first difference, if any. */
async function checkTable(
  db: Db,
  table: MoneyTable,
  accountId: string | undefined,
): Promise<{ rows: number; finding?: Finding }> {
  const result = await sql<Finding & { rows: bigint }>`
    with cur as (${currentRows(table, accountId)}),
    rec as (
      select row_id,
        (array_agg(digest order by seq desc))[1] as digest,
        max(seq) as seq,
        bool_and(by_service) as by_service,
        (array_agg(account_id order by seq desc))[1] as account_id,
        (array_agg(livemode order by seq desc))[1] as livemode
      from money_row_digests
      where table_name = ${table} ${accountId === undefined ? sql`` : sql`and account_id = ${accountId}`}
      group by row_id
    ),
    found as (
      select coalesce(cur.row_id, rec.row_id) as row_id, cur.digest as current, rec.digest as recorded,
        rec.seq, rec.by_service, coalesce(cur.account_id, rec.account_id) as account_id,
        coalesce(cur.livemode, rec.livemode) as livemode
      from cur full join rec on rec.row_id = cur.row_id
      where cur.digest is distinct from rec.digest or not rec.by_service
      order by rec.seq nulls first, 1
      limit 1
    )
    select (select count(*) from cur) as rows, found.* from (select 1) one left join found on true`.execute(db);
  const row = result.rows[0]!;
  return { rows: Number(row.rows), ...(row.row_id === null ? {} : { finding: row }) };
}

function describe(finding: Finding): string {
  const at = finding.seq === null ? '' : ` (digest seq=${finding.seq})`;
  if (finding.current === null && finding.recorded !== null) {
    return `the row is missing: deleted outside plainpay, though its digest was recorded${at}`;
  }
  if (finding.recorded === null && finding.seq === null) {
    return 'no digest records this row: it was added outside plainpay, with the recording trigger disabled';
  }
  if (finding.current !== finding.recorded) {
    return finding.recorded === null
      ? `the row was deleted${at} and is there again: added outside plainpay`
      : `its contents differ from its newest recorded digest${at}: edited outside plainpay, with the recording trigger disabled`;
  }
  return `it was ${finding.current === null ? 'deleted' : 'written'} by a database session that is not plainpay's${at}: changed outside plainpay`;
}

/** Every money row in scope (an account's, or all) against its digests; the first one broken. */
export async function checkMoneyRows(
  db: Db,
  scope: { accountId?: string },
): Promise<{ moneyRowsChecked: number; broken?: BrokenRow }> {
  let moneyRowsChecked = 0;
  for (const table of MONEY_TABLES) {
    const { rows, finding } = await checkTable(db, table, scope.accountId);
    moneyRowsChecked += rows;
    if (finding) {
      return {
        moneyRowsChecked,
        broken: {
          seq: null,
          accountId: finding.account_id,
          livemode: finding.livemode,
          table,
          rowId: finding.row_id,
          columns: [],
          reason: describe(finding),
        },
      };
    }
  }
  return { moneyRowsChecked };
}
