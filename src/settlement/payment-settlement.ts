// The settlement worker's intake: which paid payments to offer the start_payment_settlements tool
// (tools/system/start-payment-settlements.ts), which records them in the ledger and starts their
// settlement. The on-chain case ends in the tools that record a settlement batch's outcome.

import { ensureActionLogHeads } from '../audit/action-log.ts';
import { oldestPaidPayments } from '../db/repositories/payments.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { MAX_OFFERED_PAYMENTS, startPaymentSettlements } from '../../tools/system/start-payment-settlements.ts';

export interface PaymentIntakeOptions {
  /** Payments per run (one transaction). */
  chunk: number;
  /**
   * Whether test-mode payments may be paid out on the configured chain (testMoneyMayMoveOn: only on
   * the embedded devnet, a local node or a known test network; elsewhere they settle into the balance).
   * Asked only when a test-mode payment has an address; the worker caches the answer.
   */
  testModeOnChain(): Promise<boolean>;
}

/**
 * Offers the oldest paid payments, a few chunks deep (a second worker whose first chunk another
 * holds takes the next), to one run of start_payment_settlements, which takes up to `chunk` of them
 * that no other run holds. Returns how many it took (0: nothing to do).
 */
export async function settlePaidPayments(env: ToolEnvironment, options: PaymentIntakeOptions): Promise<number> {
  const offered = await oldestPaidPayments(env.db, Math.min(options.chunk * 4, MAX_OFFERED_PAYMENTS));
  if (offered.length === 0) return 0;
  const testMoney = offered.some((p) => !p.livemode && p.wants_chain) ? await options.testModeOnChain() : false;
  // The run takes only free action-log locks (busyAccounts 'skip'); a head it had to create could
  // wait for a merchant's first logged call while the run holds that merchant's payments. Made
  // here, holding nothing, the run finds them all.
  await ensureActionLogHeads(
    env.db,
    offered.map((p) => p.account_id),
  );
  const result = await runSystemTool(env, startPaymentSettlements, {
    payment_ids: offered.map((p) => p.id),
    limit: Math.min(options.chunk, MAX_OFFERED_PAYMENTS),
    test_money_on_chain: testMoney,
  });
  return result.taken;
}
