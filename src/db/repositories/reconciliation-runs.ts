import { type Insertable, sql } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import type {
  ReconciliationLineRow,
  ReconciliationLinesTable,
  ReconciliationRunRow,
  ReconciliationTrigger,
} from '../tables/reconciliation.ts';

// Runs of the daily reconciliation and the differences each found (src/reconciliation/). Neither
// is money: a run reads the money tables and records what it read.

/** pg allows 65 535 bind parameters per statement; a line takes 13. */
const LINE_CHUNK = 1000;

export type NewReconciliationLine = Omit<Insertable<ReconciliationLinesTable>, 'run_id' | 'line_no'>;

/** A run asked for now (CLI, operator API): it runs at once, whatever else ran for that day. */
export async function insertRun(
  db: Db,
  run: { id: string; day: string; trigger: ReconciliationTrigger; holder: string; now: Date; leaseUntil: Date },
): Promise<void> {
  await db
    .insertInto('reconciliation_runs')
    .values({
      id: run.id,
      day: run.day,
      trigger: run.trigger,
      status: 'running',
      claimed_by: run.holder,
      lease_until: run.leaseUntil,
      started_at: run.now,
    })
    .execute();
}

/**
 * The scheduled run of a day, for this holder: made if there is none, or taken over when it
 * failed or its holder stopped renewing it (the lease passed). Undefined when it is done, or
 * another holder has it: one day's scheduled run runs once, however many workers ask at once.
 */
export async function claimScheduledRun(
  db: Db,
  claim: { id: string; day: string; holder: string; now: Date; leaseUntil: Date },
): Promise<string | undefined> {
  const row = await db
    .insertInto('reconciliation_runs')
    .values({
      id: claim.id,
      day: claim.day,
      trigger: 'schedule',
      status: 'running',
      claimed_by: claim.holder,
      lease_until: claim.leaseUntil,
      started_at: claim.now,
    })
    .onConflict((oc) =>
      oc
        .column('day')
        .where('trigger', '=', 'schedule')
        .doUpdateSet({
          status: 'running',
          claimed_by: claim.holder,
          lease_until: claim.leaseUntil,
          started_at: claim.now,
          error: null,
        })
        .where('reconciliation_runs.status', '<>', 'completed')
        .where('reconciliation_runs.lease_until', '<', claim.now),
    )
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/**
 * Records a run's result and its lines, in the caller's transaction, if this holder still holds
 * it (false otherwise: another worker took it over, and its result counts).
 */
export async function completeRun(
  trx: Db,
  result: {
    id: string;
    holder: string;
    finishedAt: Date;
    summary: unknown;
    lines: readonly NewReconciliationLine[];
    coverRatio: number | null;
    shortfallMinor: bigint | null;
  },
): Promise<boolean> {
  const done = await trx
    .updateTable('reconciliation_runs')
    .set({
      status: 'completed',
      finished_at: result.finishedAt,
      summary: JSON.stringify(result.summary),
      differences: result.lines.length,
      treasury_cover_ratio: result.coverRatio,
      treasury_shortfall_minor: result.shortfallMinor,
    })
    .where('id', '=', result.id)
    .where('claimed_by', '=', result.holder)
    .where('status', '=', 'running')
    .returning('id')
    .executeTakeFirst();
  if (!done) return false;
  for (let i = 0; i < result.lines.length; i += LINE_CHUNK) {
    await trx
      .insertInto('reconciliation_lines')
      .values(result.lines.slice(i, i + LINE_CHUNK).map((l, j) => ({ ...l, run_id: result.id, line_no: i + j + 1 })))
      .execute();
  }
  return true;
}

/** A run that failed: kept with its error; a scheduled one is taken up again once `retryAt` has passed. */
export async function failRun(
  db: Db,
  failure: { id: string; holder: string; finishedAt: Date; error: string; retryAt: Date },
): Promise<void> {
  await db
    .updateTable('reconciliation_runs')
    .set({ status: 'failed', finished_at: failure.finishedAt, error: failure.error, lease_until: failure.retryAt })
    .where('id', '=', failure.id)
    .where('claimed_by', '=', failure.holder)
    .where('status', '=', 'running')
    .execute();
}

export function findRun(db: Db, id: string): Promise<ReconciliationRunRow | undefined> {
  return db.selectFrom('reconciliation_runs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The day's scheduled run, if one was made. */
export function findScheduledRun(db: Db, day: string): Promise<ReconciliationRunRow | undefined> {
  return db
    .selectFrom('reconciliation_runs')
    .selectAll()
    .where('day', '=', day)
    .where('trigger', '=', 'schedule')
    .executeTakeFirst();
}

/** Runs, the latest day first (and its latest run first): the history. */
export function listRuns(db: Db, limit: number): Promise<ReconciliationRunRow[]> {
  return db
    .selectFrom('reconciliation_runs')
    .selectAll()
    .orderBy('day', 'desc')
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The run /metrics reports: the latest completed run of the latest day reconciled. */
export function latestCompletedRun(db: Db): Promise<ReconciliationRunRow | undefined> {
  return db
    .selectFrom('reconciliation_runs')
    .selectAll()
    .where('status', '=', 'completed')
    .orderBy('day', 'desc')
    .orderBy('finished_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** A run's lines in order; with a scope, only that merchant's, of that mode. */
export function listRunLines(db: Db, runId: string, scope?: ModeScope): Promise<ReconciliationLineRow[]> {
  let query = db.selectFrom('reconciliation_lines').selectAll().where('run_id', '=', runId);
  if (scope) query = query.where('account_id', '=', scope.accountId).where('livemode', '=', scope.livemode);
  return query.orderBy('line_no').execute();
}

/** Lines of a run by kind and mode ('' for lines of no one mode): what /metrics counts. */
export async function countRunLines(
  db: Db,
  runId: string,
): Promise<Array<{ kind: string; livemode: boolean | null; count: number }>> {
  const rows = await db
    .selectFrom('reconciliation_lines')
    .select(['kind', 'livemode', sql<string>`count(*)::text`.as('count')])
    .where('run_id', '=', runId)
    .groupBy(['kind', 'livemode'])
    .execute();
  return rows.map((r) => ({ kind: r.kind, livemode: r.livemode, count: Number(r.count) }));
}

/** Completed runs, the latest day first, with how many of their lines are this merchant's (of this mode). */
export async function listCompletedRunsFor(
  db: Db,
  scope: ModeScope,
  limit: number,
): Promise<Array<Pick<ReconciliationRunRow, 'id' | 'day' | 'trigger' | 'finished_at'> & { lines: number }>> {
  const rows = await db
    .selectFrom('reconciliation_runs as r')
    .select((eb) => [
      'r.id',
      'r.day',
      'r.trigger',
      'r.finished_at',
      eb
        .selectFrom('reconciliation_lines as l')
        .select(sql<string>`count(*)::text`.as('n'))
        .whereRef('l.run_id', '=', 'r.id')
        .where('l.account_id', '=', scope.accountId)
        .where('l.livemode', '=', scope.livemode)
        .as('lines'),
    ])
    .where('r.status', '=', 'completed')
    .orderBy('r.day', 'desc')
    .orderBy('r.finished_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, lines: Number(r.lines ?? 0) }));
}
