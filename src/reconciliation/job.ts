import { findScheduledRun } from '../db/repositories/reconciliation-runs.ts';
import type { ReconciliationRunRow } from '../db/tables/reconciliation.ts';
import type { ReconciliationServices } from './services.ts';
import { pollingJob, type WorkerJob } from '../worker-job.ts';
import { LISTING_MARGIN_MS } from './collections.ts';
import { previousDay } from './day.ts';
import { runScheduledReconciliation } from './runs.ts';

/**
 * A day is reconciled once it has been over this long: the providers' rows of its last minutes,
 * which the listing reads up to this margin past midnight, are in by then.
 */
const AFTER_DAY_END_MS = LISTING_MARGIN_MS;
/** How often a worker looks whether yesterday's run is due: one indexed read. */
const POLL_MS = 5 * 60_000;

/**
 * Runs yesterday's scheduled reconciliation if it is due and no worker has it or has done it.
 * Returns the run when this process ran it. Missed days (the instance was down) are the
 * operator's to run: `plainpay reconcile --date`.
 */
export async function reconcileYesterdayIfDue(
  services: ReconciliationServices,
): Promise<ReconciliationRunRow | undefined> {
  const now = services.clock.now();
  const day = previousDay(new Date(now.getTime() - AFTER_DAY_END_MS));
  const existing = await findScheduledRun(services.db, day);
  // Done, or held (running, or failed and waiting for its retry): nothing to claim now.
  if (existing && (existing.status === 'completed' || existing.lease_until > now)) return undefined;
  return runScheduledReconciliation(services, day);
}

/** The worker job: once a day, for the day before (docs/reconciliation.md). */
export const reconciliationJob: WorkerJob = pollingJob('reconciliation', POLL_MS, async (runtime) => {
  await reconcileYesterdayIfDue(runtime);
});
