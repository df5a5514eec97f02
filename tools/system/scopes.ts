import type { SystemToolSpec } from '../../src/core/tool.ts';
import type { ModeScope } from '../../src/db/database.ts';

/** The distinct (account, mode) pairs of some rows, as a many-account system run names them. */
export function uniqueScopes(rows: readonly { account_id: string; livemode: boolean }[]): ModeScope[] {
  const seen = new Map<string, ModeScope>();
  for (const row of rows)
    seen.set(`${row.account_id}:${row.livemode}`, { accountId: row.account_id, livemode: row.livemode });
  return [...seen.values()];
}

/** Whether a row belongs to this account and mode. */
export function inScope(row: { account_id: string; livemode: boolean }, scope: ModeScope): boolean {
  return row.account_id === scope.accountId && row.livemode === scope.livemode;
}

/**
 * A batch's progress that moves no merchant's money (planned, sent, its block, final, re-planned):
 * its run acts for no merchant, so it takes no action-log lock, and may run inside the worker's own
 * transaction after its row locks (runSystemToolIn). No merchant's log records it: what a merchant
 * sees of a batch is its outcome (confirmed, failed, undone), and a row per step would be noise.
 */
export function forNoMerchant<I, O>(): SystemToolSpec<I, O> {
  return {
    async accounts() {
      return [];
    },
  };
}
