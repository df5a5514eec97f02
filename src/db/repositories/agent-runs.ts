import type { Insertable, Updateable } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import { FIRST_PAGE, fromCursor, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { AgentRunRow, AgentRunStatus, AgentRunsTable } from '../tables/money.ts';
import { findScoped } from './scoped.ts';

// Agent runs: the API's and the dashboard's reads, and the writes of src/agent/runtime.ts, which
// keeps the rules of a run's life (when it starts, ends, waits and takes an answer).

/** A run as its owner sees it: another account's or the other mode's run does not exist. */
export function findAgentRun(db: Db, scope: ModeScope, id: string): Promise<AgentRunRow | undefined> {
  return findScoped(db, 'agent_runs', scope, id);
}

/** One page of the caller's runs, newest first, optionally of one status: GET /agent/runs and the Runs screen. */
export async function listRunsPage(
  db: Db,
  scope: ModeScope,
  filter: { status?: AgentRunStatus | readonly AgentRunStatus[] | undefined },
  page: PageRequest,
): Promise<Page<AgentRunRow>> {
  const keyset = await keysetIn(db, 'agent_runs', scope, page, 'run');
  let query = db
    .selectFrom('agent_runs')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (typeof filter.status === 'string') query = query.where('status', '=', filter.status);
  else if (filter.status) query = query.where('status', 'in', filter.status);
  return readPage(query, keyset, page.limit);
}

/** The caller's newest `count` runs, in brief (the Overview). */
export async function listRecentRuns(
  db: Db,
  scope: ModeScope,
  count: number,
): Promise<Pick<AgentRunRow, 'id' | 'status' | 'instruction' | 'created_at'>[]> {
  const query = db
    .selectFrom('agent_runs')
    .select(['id', 'status', 'instruction', 'created_at'])
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  return fromCursor(query, FIRST_PAGE, count).execute();
}

/** Starts a run; false when another run of the account and mode holds its idempotency key. */
export async function insertAgentRun(db: Db, run: Insertable<AgentRunsTable>): Promise<boolean> {
  const inserted = await db
    .insertInto('agent_runs')
    .values(run)
    .onConflict((oc) =>
      oc.columns(['account_id', 'livemode', 'idempotency_key']).where('idempotency_key', 'is not', null).doNothing(),
    )
    .executeTakeFirst();
  return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The run that holds this idempotency key in the account and mode (it must exist). */
export function getAgentRunByIdempotencyKey(db: Db, scope: ModeScope, idempotencyKey: string): Promise<AgentRunRow> {
  return db
    .selectFrom('agent_runs')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirstOrThrow();
}

/** Sets a run's end (or its question) while it still has the status `from`; false when it had not. */
export async function endAgentRun(
  db: Db,
  runId: string,
  from: AgentRunStatus,
  end: Updateable<AgentRunsTable>,
): Promise<boolean> {
  const ended = await db
    .updateTable('agent_runs')
    .set(end)
    .where('id', '=', runId)
    .where('status', '=', from)
    .executeTakeFirst();
  return Number(ended.numUpdatedRows) === 1;
}

/** Takes a run that waits for an answer back to running, if its question has not lapsed at `now`. */
export async function resumeAnsweredRun(db: Db, runId: string, now: Date): Promise<boolean> {
  const taken = await db
    .updateTable('agent_runs')
    .set({ status: 'running', answer_by: null })
    .where('id', '=', runId)
    .where('status', '=', 'needs_input')
    .where('answer_by', '>', now)
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) === 1;
}

/** Up to 100 of the caller's runs whose question lapsed unanswered by `now`. */
export function listLapsedQuestionRuns(db: Db, scope: ModeScope, now: Date): Promise<AgentRunRow[]> {
  return db
    .selectFrom('agent_runs')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '=', 'needs_input')
    .where('answer_by', '<=', now)
    .limit(100)
    .execute();
}
