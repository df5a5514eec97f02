import type { Db } from '../database.ts';
import type { ActionLogRow } from '../tables/money.ts';

// Reads of the action log that a tool asks of it. The log is written by src/audit (action-log.ts).

/** The payloads of an action's failed steps, newest first: each approval that ran and failed. */
export async function listFailedStepPayloads(
  db: Db,
  accountId: string,
  actionId: string,
): Promise<Pick<ActionLogRow, 'payload'>[]> {
  return db
    .selectFrom('action_log')
    .select('payload')
    .where('account_id', '=', accountId)
    .where('action_id', '=', actionId)
    .where('entry_type', '=', 'action.failed')
    .orderBy('seq', 'desc')
    .execute();
}
