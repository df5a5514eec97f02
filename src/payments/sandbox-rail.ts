import type { ToolEnvironment } from '../core/tool.ts';
import type { ModeScope } from '../db/database.ts';
import { recordPaymentAttempt } from '../../tools/system/record-payment-attempt.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';

export type SandboxOutcome = 'succeeded' | 'declined';

/**
 * The sandbox payer rail (test mode): the payer's "Pay" / "Decline" on the checkout page and the
 * test helper both land here, and go where every rail's outcome goes, record_payment_attempt.
 * A success moves pending → paid and announces payment.paid; a decline is recorded as a failed
 * attempt and leaves the payment pending so the payer can retry.
 */
export async function paySandbox(deps: ToolEnvironment, scope: ModeScope, paymentId: string, outcome: SandboxOutcome) {
  return runSystemTool(deps, recordPaymentAttempt, { payment_id: paymentId, rail: 'sandbox', outcome }, scope);
}
