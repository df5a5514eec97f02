import type { Db, ModeScope } from '../database.ts';
import { FIRST_PAGE, fromCursor, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { AgentRunRow, AgentRunStatus } from '../tables/money.ts';
import { findScoped } from './scoped.ts';

// Reads of agent runs for the API's and the dashboard's lists. src/agent/runtime.ts writes them.

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
