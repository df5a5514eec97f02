import type { AnyTool } from '../src/core/tool.ts';
import { createPayment } from './create-payment.ts';
import { createPayout } from './create-payout.ts';
import { getBalance } from './get-balance.ts';
import { getConfirmation } from './get-confirmation.ts';
import { getPayment } from './get-payment.ts';
import { getPayout } from './get-payout.ts';
import { getRevenue } from './get-revenue.ts';
import { listPayments } from './list-payments.ts';
import { listPayouts } from './list-payouts.ts';
import { listPendingConfirmations } from './list-pending-confirmations.ts';
import { listRefunds } from './list-refunds.ts';
import { listRevenueShares } from './list-revenue-shares.ts';
import { refundPayment } from './refund-payment.ts';
import { splitRevenue } from './split-revenue.ts';
import { expirePayments } from './system/expire-payments.ts';
import { fundTestBalance } from './system/fund-test-balance.ts';
import { recordPaymentAttempt } from './system/record-payment-attempt.ts';
import { recordRefundOutcome } from './system/record-refund-outcome.ts';
import { recordLateSuccessRefund } from './system/record-late-success-refund.ts';
import { recordRefundSubmission } from './system/record-refund-submission.ts';
import { recordTreasuryOpening } from './system/record-treasury-opening.ts';
import { finalizeSettlementBatches, recordSettlementBatchBlock } from './system/confirmed-settlement-batches.ts';
import { planSettlementBatch } from './system/plan-settlement-batch.ts';
import { finalizeGoneDevnetBatches, replanSettlementBatches } from './system/replan-settlement-batches.ts';
import { recordSettlementBatchNonce, recordSettlementBatchSent } from './system/send-settlement-batch.ts';
import {
  confirmSettlementBatch,
  failQueuedTransfers,
  failSettlementBatch,
  revertSettlementBatch,
} from './system/settlement-batches.ts';
import { startPaymentAttempt } from './system/start-payment-attempt.ts';
import { startPaymentSettlements } from './system/start-payment-settlements.ts';
import {
  confirmX402Authorization,
  failX402Authorization,
  recordX402Authorization,
  revertX402Authorization,
} from './system/x402-authorizations.ts';

/**
 * The catalogue: every tool, in one explicit list (no autoloading). The REST routes, the agent,
 * the MCP server and the dashboard take their tools from here. Adding a tool is one file and
 * one line below. Approving a held action is deliberately not a tool (policy/approvals.ts).
 */
export const TOOLS: readonly AnyTool[] = [
  createPayment,
  getPayment,
  listPayments,
  getBalance,
  getRevenue,
  createPayout,
  getPayout,
  listPayouts,
  refundPayment,
  listRefunds,
  splitRevenue,
  listRevenueShares,
  listPendingConfirmations,
  getConfirmation,
];

export function findTool(name: string): AnyTool | undefined {
  return TOOLS.find((tool) => tool.name === name);
}

/**
 * The service's own money steps (tools/system/, ToolDefinition.system): run on the `system` channel
 * by the workers, the payer's page and the test helpers; not offered to REST, MCP or the agent. With
 * TOOLS they are every way money moves (docs/architecture.md; test/architecture.test.ts holds it).
 */
export const SYSTEM_TOOLS: readonly AnyTool[] = [
  startPaymentAttempt,
  recordPaymentAttempt,
  startPaymentSettlements,
  planSettlementBatch,
  recordSettlementBatchSent,
  recordSettlementBatchNonce,
  recordSettlementBatchBlock,
  finalizeSettlementBatches,
  replanSettlementBatches,
  finalizeGoneDevnetBatches,
  confirmSettlementBatch,
  failSettlementBatch,
  revertSettlementBatch,
  failQueuedTransfers,
  recordRefundSubmission,
  recordRefundOutcome,
  recordLateSuccessRefund,
  expirePayments,
  fundTestBalance,
  recordTreasuryOpening,
  recordX402Authorization,
  confirmX402Authorization,
  failX402Authorization,
  revertX402Authorization,
];
