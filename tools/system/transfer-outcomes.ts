// What happens to the object behind a transfer when the transfer ends. One handler per transfer kind,
// listed in one map (no registration at a distance). Each runs inside the system tool that records
// the outcome (confirm_settlement_batch, fail_settlement_batch, revert_settlement_batch), after the
// transfer row and the ledger have been updated, so the object's state change and its outbox event
// commit together with them or not at all. What a handler is: transfer-handler.ts.

import type { TransferKind } from '../../src/db/tables/settlement.ts';
import { paymentSettlementHandler } from './payment-settlement-outcomes.ts';
import { payoutTransferHandler } from './payout-outcomes.ts';
import type { TransferHandler, TransferHandlers } from './transfer-handler.ts';

/**
 * For kinds whose owning feature has no object to move on chain outcomes (refunds are paid back on
 * the payer's rail today): the transfer row and the ledger already record the outcome; this logs it.
 */
function recordOnly(kind: TransferKind): TransferHandler {
  return {
    async onConfirmed(_db, items, ctx) {
      ctx.logger.info({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfers confirmed');
    },
    async onFailed(_db, items, ctx) {
      ctx.logger.warn({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfers failed');
    },
    async onReverted(_db, items, ctx) {
      ctx.logger.warn({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfer confirmations undone by a reorg');
    },
  };
}

export const TRANSFER_HANDLERS: TransferHandlers = {
  payment_settlement: paymentSettlementHandler,
  // A revenue-share leg is a payout row too (src/payouts): one handler for both.
  payout: payoutTransferHandler,
  split_leg: payoutTransferHandler,
  refund: recordOnly('refund'),
};
