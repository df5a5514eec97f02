import { auditVerificationJob } from './audit/verification-job.ts';
import { expiryJob } from './payments/expiry.ts';
import { railReconcileJob } from './payments/rails/reconcile.ts';
import { reconciliationJob } from './reconciliation/job.ts';
import type { Runtime } from './runtime.ts';
import type { WorkerJob } from './worker-job.ts';
import { settlementJob } from './settlement/worker.ts';
import { webhookDeliveryJob } from './webhooks/delivery-worker.ts';

/**
 * Background jobs of the worker role. Each job coordinates through Postgres row locks only
 * (FOR UPDATE SKIP LOCKED, compare-and-set), so any number of worker processes can run them
 * side by side. A job is `start(runtime) → stop()` (worker-job.ts); add one line per job below.
 */
const JOBS: ReadonlyArray<[name: string, job: WorkerJob]> = [
  ['payment-expiry', expiryJob],
  ['webhook-delivery', webhookDeliveryJob],
  ['settlement', settlementJob],
  ['payer-rails', railReconcileJob],
  ['reconciliation', reconciliationJob],
  ['audit-verification', auditVerificationJob],
];

export function startWorkers(runtime: Runtime): () => Promise<void> {
  const stops = JOBS.map(([, job]) => job(runtime));
  runtime.logger.info({ jobs: JOBS.map(([name]) => name) }, 'workers started');
  return async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
