import { recordAuditVerification } from '../metrics/metrics.ts';
import { pollingJob } from '../worker-job.ts';
import { describeBroken, verifyActionLog } from './action-log.ts';
import { recordHeadsSeen } from './verification.ts';

/** How often a worker verifies everything: the chains, the views and every money row. */
export const AUDIT_VERIFICATION_EVERY_MS = 10 * 60_000;

/**
 * Verification while serving: each worker verifies every account's log and every money row
 * (`plainpay audit verify`, audit/action-log.ts) at start and every ten minutes, records each
 * intact head (a later verification then names a chain cut back past it), sets
 * plainpay_audit_broken, and logs the broken row as an error. Read-only but for that record.
 */
export const auditVerificationJob = pollingJob('audit-verification', AUDIT_VERIFICATION_EVERY_MS, async (runtime) => {
  const report = await verifyActionLog(runtime.db);
  await recordHeadsSeen(runtime.db, report, runtime.clock.now());
  recordAuditVerification(report.ok);
  if (!report.ok) {
    runtime.logger.error(
      { broken: report.firstBroken },
      `audit verification failed: ${describeBroken(report.firstBroken!)}; run \`plainpay audit verify\``,
    );
  }
});
