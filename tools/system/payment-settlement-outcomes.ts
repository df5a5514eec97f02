// How a payment's on-chain settlement ends: confirmed (settling → settled with the chain facts),
// failed for good (settled into the custodial balance), or undone by a reorg (settled → settling).
// Runs inside the system tools that record a settlement batch's outcome (tools/system/).

import type { Config } from '../../src/config/config.ts';
import type { Db, PaymentRow } from '../../src/db/database.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { transitionPayment } from '../../src/db/money-writes/payments.ts';
import { recordPaymentSettled } from '../../src/metrics/metrics.ts';
import { presentPayment } from '../../src/domain/present-payment.ts';
import type { RevertedTransfer, TransferHandler, TransferOutcomeContext } from './transfer-handler.ts';
import { forgetSettlementTransaction, updatePaymentRow } from '../../src/db/money-writes/payments.ts';

/** A payment settled into the merchant's custodial balance: no address, no transaction, no gas. */
export function settledIntoBalance(at: Date) {
  return {
    settlement_destination: 'balance' as const,
    settlement_address: null,
    settlement_chain_id: null,
    settlement_tx_hash: null,
    settlement_gas_used: 0n,
    settlement_gas_cost_wei: '0',
    settled_at: at,
  };
}

/**
 * `payment.settled` data: the payment's reference and metadata at the top level, unchanged (seed),
 * then amount, currency and the settlement (amount, asset, where it went, chain id, tx hash and the
 * gas the service paid), and the full payment object.
 */
function paymentSettledEventData(config: Config, payment: PaymentRow): Record<string, unknown> {
  const view = presentPayment(config, payment);
  return {
    reference: payment.reference,
    metadata: view.metadata,
    amount: view.amount,
    currency: payment.currency,
    settlement: {
      amount: view.quote.settlement_amount,
      asset: payment.settlement_asset,
      destination: payment.settlement_destination,
      address: payment.settlement_address,
      chain_id: payment.settlement_chain_id,
      tx_hash: payment.settlement_tx_hash,
      gas_used: payment.settlement_gas_used === null ? null : Number(payment.settlement_gas_used),
      gas_cost_wei: payment.settlement_gas_cost_wei,
    },
    object: view,
  };
}

export async function insertPaymentSettledEvent(db: Db, config: Config, payment: PaymentRow, now: Date): Promise<void> {
  recordPaymentSettled(payment);
  await insertEvent(db, {
    accountId: payment.account_id,
    livemode: payment.livemode,
    type: 'payment.settled',
    objectId: payment.id,
    data: paymentSettledEventData(config, payment),
    webhookUrl: payment.webhook_url,
    createdAt: now,
  });
}

/** Finishes on-chain settlements: settling → settled with the chain facts, and payment.settled. */
export const paymentSettlementHandler: TransferHandler = {
  async onConfirmed(db, items, ctx) {
    for (const item of items) {
      const chainFacts = {
        settlement_destination: 'address' as const,
        settlement_address: item.transfer.recipient,
        settlement_chain_id: item.chainId,
        settlement_tx_hash: item.txHash,
        settlement_gas_used: item.gasUsed,
        settlement_gas_cost_wei: item.gasCostWei.toString(),
        settled_at: ctx.now,
      };
      const settled = await transitionPayment(db, item.transfer.source_id, 'settling', 'settled', chainFacts, ctx.now);
      if (!settled && item.transfer.reversals > 0) {
        // Confirmed again after a reorg, and the payment moved on meanwhile (refunded while it was
        // settling again): its status stays; the chain facts are recorded, and payment.settled goes
        // out again with them (the object shows the status as it is), closing the
        // payment.settlement_reverted that was sent.
        const corrected = await updatePaymentRow(db, item.transfer.source_id, { ...chainFacts, updated_at: ctx.now });
        if (corrected) {
          ctx.logger.warn(
            { payment: corrected.id, status: corrected.status, tx: item.txHash },
            'a settlement undone by a reorg landed again; the payment keeps its status',
          );
          await insertPaymentSettledEvent(db, ctx.config, corrected, ctx.now);
          continue;
        }
      }
      if (!settled) {
        // The tokens are paid and the ledger says so; only the payment row disagrees. Loud, not fatal:
        // failing here would keep a paid batch unconfirmed forever.
        ctx.logger.error(
          { payment: item.transfer.source_id, transfer: item.transfer.id },
          'confirmed settlement transfer for a payment that is not settling',
        );
        continue;
      }
      await insertPaymentSettledEvent(db, ctx.config, settled, ctx.now);
    }
  },

  async onFailed(db, items, ctx) {
    // The transfer could not be paid after every attempt (e.g. the token refuses the recipient). The
    // money is back in the merchant's custodial balance, so the payment is settled there, and says so.
    for (const item of items) {
      const settled = await transitionPayment(
        db,
        item.transfer.source_id,
        'settling',
        'settled',
        settledIntoBalance(ctx.now),
        ctx.now,
      );
      if (!settled) {
        ctx.logger.error({ payment: item.transfer.source_id }, 'failed settlement transfer for a payment not settling');
        continue;
      }
      ctx.logger.warn(
        { payment: settled.id, transfer: item.transfer.id, reason: item.reason },
        'on-chain settlement failed for good; settled into the custodial balance',
      );
      await insertPaymentSettledEvent(db, ctx.config, settled, ctx.now);
    }
  },

  async onReverted(db, items, ctx) {
    await revertPaymentSettlements(db, ctx.config, items, ctx);
  },
};

/**
 * `payment.settlement_reverted` data: what payment.settled said about the settlement that is no
 * longer on the chain, and the payment as it is now (settling again).
 */
function paymentSettlementRevertedEventData(
  config: Config,
  payment: PaymentRow,
  reverted: { chainId: number; txHash: string; blockNumber: bigint | null; reason: string },
): Record<string, unknown> {
  const view = presentPayment(config, payment);
  return {
    reference: payment.reference,
    metadata: view.metadata,
    reverted_settlement: {
      chain_id: reverted.chainId,
      tx_hash: reverted.txHash,
      block_number: reverted.blockNumber === null ? null : Number(reverted.blockNumber),
      reason: reverted.reason,
    },
    object: view,
  };
}

/**
 * A reorg took a payment's settlement transaction off the chain: settled → settling, the chain facts
 * cleared, and payment.settlement_reverted (payment.settled goes out again when it lands again).
 * A payment refunded in the meantime keeps its status; its transaction facts are cleared, the
 * correcting event is sent all the same, and when the batch lands again the facts are recorded and
 * payment.settled is sent again without a status change.
 */
async function revertPaymentSettlements(
  db: Db,
  config: Config,
  items: readonly RevertedTransfer[],
  ctx: TransferOutcomeContext,
): Promise<void> {
  for (const item of items) {
    const settling = await transitionPayment(
      db,
      item.transfer.source_id,
      'settled',
      'settling',
      {
        settlement_destination: null,
        settlement_address: null,
        settlement_chain_id: null,
        settlement_tx_hash: null,
        settlement_gas_used: null,
        settlement_gas_cost_wei: null,
        settled_at: null,
      },
      ctx.now,
    );
    let payment = settling;
    if (!payment) {
      // Refunded (or otherwise moved on) since it settled: the status stays, but the chain facts
      // must not name a transaction that is no longer on the chain. They are recorded again when
      // the batch is confirmed again (onConfirmed).
      payment = await forgetSettlementTransaction(db, item.transfer.source_id, item.txHash, ctx.now);
      payment ??= await findPaymentById(db, item.transfer.source_id);
      if (!payment) continue;
      ctx.logger.error(
        { payment: payment.id, status: payment.status, transfer: item.transfer.id },
        'reorg undid the settlement of a payment that is no longer settled; its status is kept',
      );
    }
    await insertEvent(db, {
      accountId: payment.account_id,
      livemode: payment.livemode,
      type: 'payment.settlement_reverted',
      objectId: payment.id,
      data: paymentSettlementRevertedEventData(config, payment, item),
      webhookUrl: payment.webhook_url,
      createdAt: ctx.now,
    });
  }
}
