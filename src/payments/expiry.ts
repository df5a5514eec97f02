import { insertEvent } from '../db/repositories/events.ts';
import { pruneIdempotencyRecords } from '../db/repositories/idempotency.ts';
import { transitionPayment } from '../db/repositories/payments.ts';
import { CONFIRMATION_EXPIRY_BATCH, expireDueConfirmations } from '../policy/confirmations.ts';
import type { Runtime } from '../runtime.ts';
import { pollingJob, SAFETY_POLL_MS, untilDue, type WorkerJob } from '../worker-job.ts';
import { presentPayment } from './present.ts';

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
 * Moves pending sessions whose ttl has lapsed to `expired`, each with its payment.expired event
 * in the same transaction. SKIP LOCKED lets several workers share the work; the
 * compare-and-set means a payment paid at the last moment is never expired.
 * Returns how many payments expired.
 */
export async function expireDuePayments(runtime: Runtime, now: Date = runtime.clock.now()): Promise<number> {
  return runtime.db.transaction().execute(async (trx) => {
    const due = await trx
      .selectFrom('payments')
      .select('id')
      .where('status', '=', 'pending')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(BATCH)
      .forUpdate()
      .skipLocked()
      .execute();
    let expired = 0;
    for (const { id } of due) {
      const row = await transitionPayment(trx, id, 'pending', 'expired', { expired_at: now }, now);
      if (!row) continue;
      const view = presentPayment(runtime.config, row);
      await insertEvent(trx, {
        accountId: row.account_id,
        livemode: row.livemode,
        type: 'payment.expired',
        objectId: row.id,
        data: { object: view, reference: view.reference, metadata: view.metadata },
        webhookUrl: row.webhook_url,
        createdAt: now,
      });
      expired++;
    }
    return expired;
  });
}

/** When the next pending payment or held action lapses; null when none is pending. */
async function nextLapse(runtime: Runtime): Promise<Date | null> {
  const [payment, confirmation] = await Promise.all([
    runtime.db
      .selectFrom('payments')
      .select('expires_at')
      .where('status', '=', 'pending')
      .orderBy('expires_at')
      .limit(1)
      .executeTakeFirst(),
    runtime.db
      .selectFrom('confirmations')
      .select('expires_at')
      .where('status', '=', 'pending')
      .orderBy('expires_at')
      .limit(1)
      .executeTakeFirst(),
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
