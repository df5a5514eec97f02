import { ensureActionLogHeads } from '../audit/action-log.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { findNextConfirmationLapse } from '../db/repositories/confirmations.ts';
import { pruneIdempotencyRecords } from '../db/repositories/idempotency.ts';
import { findLapsedPendingPayments, findNextPaymentLapse } from '../db/repositories/payments.ts';
import { CONFIRMATION_EXPIRY_BATCH, expireDueConfirmations } from '../policy/confirmations.ts';
import { pollingJob, SAFETY_POLL_MS, untilDue, type WorkerJob } from '../worker-job.ts';
import { expirePayments, MAX_OFFERED_SESSIONS } from '../../tools/system/expire-payments.ts';

const BATCH = 100;
/**
 * The longest the job sleeps. It sleeps until the next pending payment or held action lapses, so
 * this only bounds how late it notices one created meanwhile: shorter than the shortest ttl (1
 * minute for payments, 15 for held actions), so each still expires on time.
 */
const MAX_SLEEP_MS = SAFETY_POLL_MS;
const MIN_SLEEP_MS = 100;
/** Pruning is housekeeping: at most this often, not on every pass. */
const PRUNE_EVERY_MS = 10 * 60_000;
/** Idempotency keys are promised for 24 h; we keep them 48 h before pruning. */
const IDEMPOTENCY_RETENTION_MS = 48 * 3600_000;

/**
 * Offers the pending sessions whose ttl has lapsed, oldest first and a few batches deep (a second
 * worker whose first batch another holds takes the next), to one run of expire_payments
 * (tools/system/), which expires up to BATCH of them. Returns how many payments expired.
 */
export async function expireDuePayments(deps: ToolEnvironment): Promise<number> {
  const offered = await findLapsedPendingPayments(deps.db, deps.clock.now(), Math.min(BATCH * 4, MAX_OFFERED_SESSIONS));
  if (offered.length === 0) return 0;
  // As for settlement: the heads exist before the run locks any session (settlePaidPayments).
  await ensureActionLogHeads(
    deps.db,
    offered.map((p) => p.account_id),
  );
  const result = await runSystemTool(deps, expirePayments, { payment_ids: offered.map((p) => p.id), limit: BATCH });
  return result.expired.length;
}

/** When the next pending payment or held action lapses; null when none is pending. */
async function nextLapse(deps: Pick<ToolEnvironment, 'db'>): Promise<Date | null> {
  const [payment, confirmation] = await Promise.all([
    findNextPaymentLapse(deps.db),
    findNextConfirmationLapse(deps.db),
  ]);
  const times = [payment?.expires_at, confirmation?.expires_at].filter((t): t is Date => t !== undefined);
  return times.length === 0 ? null : new Date(Math.min(...times.map((t) => t.getTime())));
}

/** Sleeps until the next lapse (at most MAX_SLEEP_MS); nothing else wakes it. */
export const expiryJob: WorkerJob = (runtime) => {
  let prunedAt = Number.NEGATIVE_INFINITY;
  return pollingJob('expiry', MAX_SLEEP_MS, async (rt, stopping) => {
    while (!stopping() && (await expireDuePayments(rt)) === BATCH) {
      // A full batch: more are due, keep going.
    }
    while (
      !stopping() &&
      (await expireDueConfirmations(rt.db, rt.config, rt.clock.now())) === CONFIRMATION_EXPIRY_BATCH
    ) {
      // Likewise for held actions that lapsed (action.expired).
    }
    const now = rt.clock.now();
    if (now.getTime() - prunedAt >= PRUNE_EVERY_MS) {
      await pruneIdempotencyRecords(rt.db, new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS));
      prunedAt = now.getTime();
    }
    // At least a moment: a lapsed row another worker holds (SKIP LOCKED) must not make this one spin.
    return Math.max(MIN_SLEEP_MS, untilDue(await nextLapse(rt), rt.clock.now(), MAX_SLEEP_MS));
  })(runtime);
};
