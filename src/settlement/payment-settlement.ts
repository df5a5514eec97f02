// Settling paid payments. The worker leases `paid` payments (FOR UPDATE SKIP LOCKED) and, in one
// transaction per chunk: records the payment in the ledger (rail → FX → merchant balance + fee),
// then either queues an on-chain transfer to the payout address (merchant balance → in-flight,
// payment → settling) or, with no address, settles it into the custodial balance at once
// (payment → settled, payment.settled event). The on-chain case finishes in the handler below when
// the batch carrying the transfer is confirmed.

import type { Kysely } from 'kysely';
import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { Database, Db, PaymentRow } from '../db/database.ts';
import { insertEvent } from '../db/repositories/events.ts';
import { findPaymentById, transitionPayment } from '../db/repositories/payments.ts';
import { canTransition } from '../domain/payment-status.ts';
import { credit, debit, type LedgerPosting, ledgerAccount } from '../ledger/ledger.ts';
import { presentPayment } from '../payments/present.ts';
import { recordPaymentSettled } from '../metrics/metrics.ts';
import type { RevertedTransfer, TransferHandler, TransferOutcomeContext } from './handlers.ts';
import { windowEnd } from './schedules.ts';
import {
  checkRecipient,
  type EnqueueTransferInput,
  enqueueTransfers,
  releaseReachedThresholds,
  TransferRefusedError,
} from './transfers.ts';

export interface PaymentIntakeContext {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  clock: Clock;
  /** Payments per transaction. */
  chunk: number;
  /**
   * Whether test-mode payments may be paid out on the configured chain (testMoneyMayMoveOn: only on
   * the embedded devnet, a local node or a known test network; elsewhere they settle into the balance).
   * Asked only when a test-mode payment has an address; the worker caches the answer.
   */
  testModeOnChain(): Promise<boolean>;
}

/**
 * Takes up to `chunk` paid payments no other worker holds and starts their settlement. Returns how
 * many it took (0: nothing to do).
 */
export async function settlePaidPayments(ctx: PaymentIntakeContext): Promise<number> {
  const { db, config } = ctx;

  return db.transaction().execute(async (trx) => {
    const payments = await trx
      .selectFrom('payments')
      .selectAll()
      .where('status', '=', 'paid')
      .orderBy('paid_at')
      .orderBy('id')
      .limit(ctx.chunk)
      .forUpdate()
      .skipLocked()
      .execute();
    if (payments.length === 0) return 0;

    const accountIds = [...new Set(payments.map((p) => p.account_id))];
    const accounts = await trx
      .selectFrom('accounts')
      .select(['id', 'default_payout_address'])
      .where('id', 'in', accountIds)
      .execute();
    const defaults = new Map(accounts.map((a) => [a.id, a.default_payout_address]));
    const now = ctx.clock.now();

    let testModeOnChain: boolean | undefined;
    const received: LedgerPosting[] = [];
    const transfers: EnqueueTransferInput[] = [];
    const toBalance: PaymentRow[] = [];
    for (const payment of payments) {
      received.push(paymentReceivedPosting(payment, now));
      const address = payment.payout_address ?? defaults.get(payment.account_id) ?? null;
      let onChain = address !== null && payment.settlement_minor > 0n;
      if (onChain && !payment.livemode) {
        testModeOnChain ??= await ctx.testModeOnChain();
        onChain = testModeOnChain;
      }
      if (onChain && !acceptableRecipient(address!)) {
        // A payment stored with an address no transfer may go to (validation refuses it today; a
        // row from before, or written behind the API) settles into the balance instead of failing
        // the whole chunk on every turn, which would stop settlement for everyone.
        ctx.logger.warn({ payment: payment.id }, 'payout address refused for transfer; settling into the balance');
        onChain = false;
      }
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
    const queued = await enqueueTransfers(trx, transfers, { alsoPost: received });
    await releaseReachedThresholds(trx, queued, now);

    if (transfers.length > 0) {
      if (!canTransition('paid', 'settling')) throw new Error('payment state machine lost paid → settling');
      const moved = await trx
        .updateTable('payments')
        .set((eb) => ({
          status: 'settling',
          updated_at: now,
          // When its transfer is due: the window's end, or now for instant (and a reached threshold).
          settlement_due_at: eb.fn.coalesce(
            eb
              .selectFrom('transfers')
              .select('transfers.due_at')
              .where('transfers.kind', '=', 'payment_settlement')
              .whereRef('transfers.source_id', '=', 'payments.id'),
            eb.val(now),
          ),
        }))
        .where(
          'id',
          'in',
          transfers.map((t) => t.sourceId),
        )
        .where('status', '=', 'paid')
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== transfers.length) {
        throw new Error('a leased paid payment changed status under its row lock');
      }
    }
    for (const payment of toBalance) {
      const settled = await transitionPayment(
        trx,
        payment.id,
        'paid',
        'settled',
        {
          settlement_destination: 'balance',
          settlement_address: null,
          settlement_chain_id: null,
          settlement_tx_hash: null,
          settlement_gas_used: 0n,
          settlement_gas_cost_wei: '0',
          settled_at: now,
          // Crediting the balance costs no gas: no window to wait for.
          settlement_due_at: now,
        },
        now,
      );
      if (!settled) throw new Error(`payment ${payment.id} changed status under its row lock`);
      await insertPaymentSettledEvent(trx, config, settled, now);
    }
    return payments.length;
  });
}

/**
 * The payer paid `amount` in local currency; at the locked quote that is `gross` in the settlement
 * asset, of which `settlement` is the merchant's and `fee` the service's. Each asset balances on its
 * own through the FX trading accounts.
 */
export function paymentReceivedPosting(payment: PaymentRow, at: Date): LedgerPosting {
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

/**
 * `payment.settled` data: the payment's reference and metadata at the top level, unchanged (seed),
 * then amount, currency and the settlement (amount, asset, where it went, chain id, tx hash and the
 * gas the service paid), and the full payment object.
 */
export function paymentSettledEventData(config: Config, payment: PaymentRow): Record<string, unknown> {
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

async function insertPaymentSettledEvent(db: Db, config: Config, payment: PaymentRow, now: Date): Promise<void> {
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
        const corrected = await db
          .updateTable('payments')
          .set({ ...chainFacts, updated_at: ctx.now })
          .where('id', '=', item.transfer.source_id)
          .returningAll()
          .executeTakeFirst();
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
        {
          settlement_destination: 'balance',
          settlement_address: null,
          settlement_chain_id: null,
          settlement_tx_hash: null,
          settlement_gas_used: 0n,
          settlement_gas_cost_wei: '0',
          settled_at: ctx.now,
        },
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
export function paymentSettlementRevertedEventData(
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
export async function revertPaymentSettlements(
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
      payment = await db
        .updateTable('payments')
        .set({
          settlement_tx_hash: null,
          settlement_gas_used: null,
          settlement_gas_cost_wei: null,
          settled_at: null,
          updated_at: ctx.now,
        })
        .where('id', '=', item.transfer.source_id)
        .where('settlement_tx_hash', '=', item.txHash)
        .returningAll()
        .executeTakeFirst();
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

function acceptableRecipient(address: string): boolean {
  try {
    checkRecipient(address);
    return true;
  } catch (error) {
    if (error instanceof TransferRefusedError) return false;
    throw error;
  }
}
