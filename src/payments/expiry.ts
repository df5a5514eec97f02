import { insertEvent } from '../db/repositories/events.ts';
import { pruneIdempotencyRecords } from '../db/repositories/idempotency.ts';
import { transitionPayment } from '../db/repositories/payments.ts';
import { CONFIRMATION_EXPIRY_BATCH, expireDueConfirmations } from '../policy/confirmations.ts';
import type { Runtime } from '../runtime.ts';
import { pollingJob, type WorkerJob } from '../worker-job.ts';
import { presentPayment } from './present.ts';

const BATCH = 100;
const POLL_MS = 1000;
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

export const expiryJob: WorkerJob = pollingJob('expiry', POLL_MS, async (runtime, stopping) => {
  while (!stopping() && (await expireDuePayments(runtime)) === BATCH) {
    // A full batch: more are due, keep going.
  }
  while (
    !stopping() &&
    (await expireDueConfirmations(runtime.db, runtime.config, runtime.clock.now())) === CONFIRMATION_EXPIRY_BATCH
  ) {
    // Likewise for held actions that lapsed (action.expired).
  }
  await pruneIdempotencyRecords(runtime.db, new Date(runtime.clock.now().getTime() - IDEMPOTENCY_RETENTION_MS));
});
