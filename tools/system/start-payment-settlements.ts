import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { inScope, uniqueScopes } from './scopes.ts';
import { listDefaultPayoutAddresses } from '../../src/db/repositories/accounts.ts';
import { lockOfferedPaidPayments } from '../../src/db/repositories/payments.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { canTransition } from '../../src/domain/payment-status.ts';
import { credit, debit, type LedgerPosting, ledgerAccount } from '../../src/ledger/ledger.ts';
import { windowEnd } from '../../src/domain/settlement-windows.ts';
import { checkRecipient, TransferRefusedError } from '../../src/domain/recipients.ts';
import {
  type EnqueueTransferInput,
  enqueueTransfers,
  releaseReachedThresholds,
} from '../../src/db/money-writes/transfers.ts';
import { insertPaymentSettledEvent, settledIntoBalance } from './payment-settlement-outcomes.ts';
import { startSettling } from '../../src/db/money-writes/payments.ts';

/** Most payments one run may be offered (the worker offers a few chunks, so a second worker finds work). */
export const MAX_OFFERED_PAYMENTS = 1000;

const settleInput = z.strictObject({
  payment_ids: z
    .array(z.string().min(1).max(100))
    .min(1)
    .max(MAX_OFFERED_PAYMENTS)
    .describe('Paid payments offered, oldest first; the run takes those no other run holds.'),
  limit: z.number().int().min(1).max(MAX_OFFERED_PAYMENTS).describe('Most payments taken in this run.'),
  test_money_on_chain: z
    .boolean()
    .describe(
      'Whether test-mode payments may be paid out on the configured chain (only on a devnet, a local node or a known test network); elsewhere they settle into the balance.',
    ),
});

const settlementStart = z.object({
  payment_id: z.string(),
  account_id: z.string(),
  livemode: z.boolean(),
  /** address: a transfer is queued (settling); balance: settled into the custodial balance now. */
  destination: z.enum(['address', 'balance']),
  address: z.string().nullable(),
  settlement_minor: z.string(),
});
type SettlementStart = z.output<typeof settlementStart>;

const settleOutput = z.object({ taken: z.number().int(), settlements: z.array(settlementStart) });

/**
 * Starts the settlement of paid payments: records each in the ledger (rail → FX → merchant balance
 * + fee), then either queues an on-chain transfer to its payout address (merchant balance →
 * in-flight, paid → settling; the transfer goes out when the payment's settlement schedule says) or,
 * with no address, settles it into the custodial balance at once (paid → settled, payment.settled).
 * The on-chain case ends in confirm_settlement_batch or fail_settlement_batch.
 *
 * Run by the settlement worker (src/settlement/payment-settlement.ts decides which payments to
 * offer). Payments another run holds are skipped (FOR UPDATE SKIP LOCKED), so workers share the work.
 */
export const startPaymentSettlements = defineTool({
  name: 'start_payment_settlements',
  title: 'Start settling paid payments',
  description: 'Records paid payments in the ledger and starts their settlement to an address or the balance.',
  input: settleInput,
  output: settleOutput,
  effect: 'money',
  scope: 'payments:write',
  system: {
    // The run's payments are locked here, no other run's (SKIP LOCKED), before any action-log lock:
    // so it takes only the free ones of those (a merchant's refund may hold one while it waits for
    // one of these payments) and leaves the rest to the next run.
    busyAccounts: 'skip',
    async accounts(input, { db }) {
      return uniqueScopes(await lockOfferedPaidPayments(db, input));
    },
    recordFor(input, output, scope) {
      const mine = output.settlements.filter((s) => inScope(s, scope));
      if (mine.length === 0) return undefined;
      return {
        input: { ...input, payment_ids: mine.map((s) => s.payment_id) },
        result: { settlements: mine },
        amountSettlementMinor: mine.reduce((sum, s) => sum + BigInt(s.settlement_minor), 0n),
      };
    },
  },
  async handler(input, { db, now, config, logger, scopes = [] }) {
    if (scopes.length === 0) return { taken: 0, settlements: [] };
    // The payments accounts() locked, of the merchants whose action logs this run holds.
    const payments = await lockOfferedPaidPayments(db, input, scopes);
    if (payments.length === 0) return { taken: 0, settlements: [] };

    const accountIds = [...new Set(payments.map((p) => p.account_id))];
    const accounts = await listDefaultPayoutAddresses(db, accountIds);
    const defaults = new Map(accounts.map((a) => [a.id, a.default_payout_address]));

    const received: LedgerPosting[] = [];
    const transfers: EnqueueTransferInput[] = [];
    const toBalance: PaymentRow[] = [];
    const settlements: SettlementStart[] = [];
    for (const payment of payments) {
      received.push(paymentReceivedPosting(payment, now));
      const address = payment.payout_address ?? defaults.get(payment.account_id) ?? null;
      let onChain = address !== null && payment.settlement_minor > 0n;
      if (onChain && !payment.livemode) onChain = input.test_money_on_chain;
      if (onChain && !acceptableRecipient(address!)) {
        // A payment stored with an address no transfer may go to (validation refuses it today; a
        // row from before, or written behind the API) settles into the balance instead of failing
        // the whole run on every turn, which would stop settlement for everyone.
        logger.warn({ payment: payment.id }, 'payout address refused for transfer; settling into the balance');
        onChain = false;
      }
      settlements.push({
        payment_id: payment.id,
        account_id: payment.account_id,
        livemode: payment.livemode,
        destination: onChain ? 'address' : 'balance',
        address: onChain ? address : null,
        settlement_minor: payment.settlement_minor.toString(),
      });
      if (onChain) {
        // The payment's schedule decides when its transfer goes out; the window is counted from
        // when it was paid, so reads could show it from then on (paymentSettlementDueAt).
        const threshold = payment.settlement_schedule === 'threshold';
        transfers.push({
          kind: 'payment_settlement',
          sourceId: payment.id,
          accountId: payment.account_id,
          livemode: payment.livemode,
          recipient: address!,
          amountMinor: payment.settlement_minor,
          at: now,
          dueAt: windowEnd(payment.settlement_schedule, payment.paid_at ?? now, config.settlement.hourMs),
          thresholdMinor: threshold ? payment.settlement_threshold_minor : null,
        });
      } else {
        // No address, nothing to send (a quote that rounds to 0), or test money on a mainnet.
        toBalance.push(payment);
      }
    }
    const queued = await enqueueTransfers(db, transfers, { alsoPost: received });
    await releaseReachedThresholds(db, queued, now);

    if (transfers.length > 0) {
      if (!canTransition('paid', 'settling')) throw new Error('payment state machine lost paid → settling');
      const moved = await startSettling(
        db,
        transfers.map((t) => t.sourceId),
        now,
      );
      if (Number(moved.numUpdatedRows) !== transfers.length) {
        throw new Error('a locked paid payment changed status under its row lock');
      }
    }
    for (const payment of toBalance) {
      // Crediting the balance costs no gas: no window to wait for.
      const facts = { ...settledIntoBalance(now), settlement_due_at: now };
      const settled = await transitionPayment(db, payment.id, 'paid', 'settled', facts, now);
      if (!settled) throw new Error(`payment ${payment.id} changed status under its row lock`);
      await insertPaymentSettledEvent(db, config, settled, now);
    }
    return { taken: payments.length, settlements };
  },
});

/**
 * The payer paid `amount` in local currency; at the locked quote that is `gross` in the settlement
 * asset, of which `settlement` is the merchant's and `fee` the service's. Each asset balances on its
 * own through the FX trading accounts.
 */
function paymentReceivedPosting(payment: PaymentRow, at: Date): LedgerPosting {
  const local = payment.currency;
  const asset = payment.settlement_asset;
  const mode = payment.livemode;
  return {
    kind: 'payment_received',
    reference: payment.id,
    at,
    entries: [
      debit(ledgerAccount.railClearing(mode, local), payment.amount_minor),
      credit(ledgerAccount.fx(mode, local), payment.amount_minor),
      debit(ledgerAccount.fx(mode, asset), payment.gross_settlement_minor),
      credit(ledgerAccount.merchant(payment.account_id, mode, asset), payment.settlement_minor),
      credit(ledgerAccount.fees(mode, asset), payment.fee_minor),
    ],
  };
}

function acceptableRecipient(address: string): boolean {
  try {
    checkRecipient(address);
    return true;
  } catch (error) {
    if (error instanceof TransferRefusedError) return false;
    throw error;
  }
}
