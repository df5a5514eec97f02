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

/**
 * The catalogue: every tool, in one explicit list (no autoloading). The REST routes, the agent,
 * the MCP server and the workers all take their tools from here. Adding a tool is one file and
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
