import type { Db, ModeScope } from '../db/database.ts';
import { listRunActionsWithConfirmations } from '../db/repositories/agent-actions.ts';

/**
 * A run's status as it stands now. A run is stored `confirmation_required` when one of its actions
 * was held, and keeps that word after a person decides; the screens show what its actions are now:
 * still waiting, or done (approved and executed), rejected, failed, or expired unapproved.
 */
export async function currentRunStatuses(
  db: Db,
  scope: ModeScope,
  runs: readonly { id: string; status: string }[],
  now: Date,
): Promise<Map<string, string>> {
  const statuses = new Map(runs.map((run) => [run.id, run.status]));
  const held = runs.filter((run) => run.status === 'confirmation_required').map((run) => run.id);
  if (held.length === 0) return statuses;
  const actions = await listRunActionsWithConfirmations(db, scope, held);
  for (const id of held) {
    const mine = actions.filter((a) => a.run_id === id);
    const waiting = (a: (typeof mine)[number]): boolean => a.status === 'held' && a.c_status === 'pending';
    const lapsed = (a: (typeof mine)[number]): boolean => waiting(a) && a.expires_at !== null && a.expires_at <= now;
    let status = 'completed';
    if (mine.some((a) => waiting(a) && !lapsed(a))) status = 'confirmation_required';
    else if (mine.some((a) => a.status === 'failed')) status = 'failed';
    else if (mine.some((a) => a.status === 'denied' || a.status === 'rejected')) status = 'rejected';
    else if (mine.some((a) => a.status === 'held')) status = 'expired';
    statuses.set(id, status);
  }
  return statuses;
}
