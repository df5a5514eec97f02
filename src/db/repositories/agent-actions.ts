import type { ExpressionBuilder } from 'kysely';
import type { Database, Db, ModeScope } from '../database.ts';
import { type CreatedRange, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { ActionDecision, ActionStatus, AgentActionRow } from '../tables/money.ts';

// Reads of the action log's actions for the lists. src/audit/ writes them and reads them as rows
// with their history (audit/action-rows.ts).

export interface ActionFilter extends CreatedRange {
  /** A final status: `expired` is a held action whose confirmation lapsed undecided. */
  status?: ActionStatus | 'expired' | undefined;
  tool?: string | undefined;
  decision?: ActionDecision | undefined;
  channel?: AgentActionRow['channel'] | undefined;
  /** Leave these channels out (the Actions screen hides the service's own steps unless asked). */
  excludeChannels?: readonly AgentActionRow['channel'][] | undefined;
}

/** One page of the caller's actions, newest first: GET /agent/actions, its CSV and the Actions screen. */
export async function listActionsPage(
  db: Db,
  scope: ModeScope,
  filter: ActionFilter,
  page: PageRequest,
  now: Date,
): Promise<Page<AgentActionRow>> {
  const keyset = await keysetIn(db, 'agent_actions', scope, page, 'action');
  let query = db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (filter.status) {
    // A held action whose confirmation lapsed reads as expired (audit/action-rows.ts finalStatus).
    const lapsed = (eb: ExpressionBuilder<Database, 'agent_actions'>) =>
      eb.exists(
        eb
          .selectFrom('confirmations as c')
          .select('c.id')
          .whereRef('c.id', '=', 'agent_actions.confirmation_id')
          .where('c.status', 'in', ['pending', 'expired'])
          .where('c.expires_at', '<=', now),
      );
    const stored = filter.status === 'expired' ? 'held' : filter.status;
    query = query.where('status', '=', stored);
    if (filter.status === 'expired') query = query.where(lapsed);
    else if (filter.status === 'held') query = query.where((eb) => eb.not(lapsed(eb)));
  }
  if (filter.tool) query = query.where('tool', '=', filter.tool);
  if (filter.decision) query = query.where('decision', '=', filter.decision);
  if (filter.channel) query = query.where('channel', '=', filter.channel);
  if (filter.excludeChannels?.length) query = query.where('channel', 'not in', [...filter.excludeChannels]);
  if (filter.created_gte) query = query.where('created_at', '>=', filter.created_gte);
  if (filter.created_lte) query = query.where('created_at', '<=', filter.created_lte);
  return readPage(query, keyset, page.limit);
}

/** The action a confirmation held, in brief (the first one, should a retry have recorded another). */
export async function findActionHeldBy(
  db: Db,
  accountId: string,
  confirmationId: string,
): Promise<Pick<AgentActionRow, 'id' | 'run_id' | 'amount_settlement_minor'> | undefined> {
  return db
    .selectFrom('agent_actions')
    .select(['id', 'run_id', 'amount_settlement_minor'])
    .where('confirmation_id', '=', confirmationId)
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .executeTakeFirst();
}

/**
 * The actions of these runs with their confirmation's status and expiry (none when nothing held
 * them): what a held run's status is now (dashboard/run-status.ts).
 */
export function listRunActionsWithConfirmations(db: Db, scope: ModeScope, runIds: readonly string[]) {
  return db
    .selectFrom('agent_actions as a')
    .leftJoin('confirmations as c', 'c.id', 'a.confirmation_id')
    .select(['a.run_id', 'a.status', 'c.status as c_status', 'c.expires_at'])
    .where('a.account_id', '=', scope.accountId)
    .where('a.livemode', '=', scope.livemode)
    .where('a.run_id', 'in', runIds)
    .execute();
}

/** A run's actions, in the order they were recorded. */
export function listRunActions(db: Db, runId: string): Promise<AgentActionRow[]> {
  return db
    .selectFrom('agent_actions')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * The ids of a run's actions: in the order they were recorded, or `unordered` (as the database
 * returns them; what an interrupted run's end has always listed).
 */
export async function listRunActionIds(db: Db, runId: string, order: 'recorded' | 'unordered'): Promise<string[]> {
  if (order === 'unordered') {
    const actions = await db.selectFrom('agent_actions').select('id').where('run_id', '=', runId).execute();
    return actions.map((a) => a.id);
  }
  const rows = await db
    .selectFrom('agent_actions')
    .select('id')
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}

/** The tools and results of a run's executed actions, in the order they were recorded. */
export function listExecutedRunResults(db: Db, runId: string): Promise<Pick<AgentActionRow, 'tool' | 'result'>[]> {
  return db
    .selectFrom('agent_actions')
    .select(['tool', 'result'])
    .where('run_id', '=', runId)
    .where('status', '=', 'executed')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** An account's most recent actions in one mode, newest first (every channel): the MCP resource's read. */
export function listRecentActions(db: Db, scope: ModeScope, limit: number): Promise<AgentActionRow[]> {
  return db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * The money a run has recorded so far, by the amounts the policy judged when each action was
 * recorded (amount_settlement_minor), as decimal text, and how many such actions: executed and
 * held actions, and a dry run's planned ones unless the plan was a deny. An action held by
 * `exceptConfirmationId` (the one being approved now, already counted once) is left out.
 */
export async function sumRunRecordedSpend(
  db: Db,
  scope: ModeScope,
  runId: string,
  exceptConfirmationId: string | null,
): Promise<{ total: string; actions: string }> {
  const counted = db
    .selectFrom('agent_actions')
    .select((eb) => [
      eb.fn.coalesce(eb.fn.sum<string>('amount_settlement_minor'), eb.val('0')).as('total'),
      eb.fn.countAll<string>().as('actions'),
    ])
    .where('run_id', '=', runId)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('amount_settlement_minor', 'is not', null)
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['executed', 'held']),
        eb.and([eb('status', '=', 'planned'), eb('decision', '!=', 'deny')]),
      ]),
    );
  return (
    exceptConfirmationId === null
      ? counted
      : counted.where((eb) =>
          eb.or([eb('confirmation_id', 'is', null), eb('confirmation_id', '!=', exceptConfirmationId)]),
        )
  ).executeTakeFirstOrThrow();
}

/** The id of the action a confirmation held, as recorded under its account and mode. */
export async function findHeldActionId(
  db: Db,
  scope: ModeScope,
  confirmationId: string,
): Promise<Pick<AgentActionRow, 'id'> | undefined> {
  return db
    .selectFrom('agent_actions')
    .select('id')
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('confirmation_id', '=', confirmationId)
    .executeTakeFirst();
}
