import { testMoneyMayMoveOn, testMoneyRefusal } from '../chain/test-networks.ts';
import { newId } from '../domain/ids.ts';
import { AppError } from '../core/errors.ts';
import type { Channel } from '../core/tool.ts';
import type { Runtime } from '../runtime.ts';
import type { Db, ModeScope } from '../db/database.ts';
import type { PayoutRow } from '../db/tables/money.ts';
import { getLedgerBalance, InsufficientBalanceError, ledgerAccount } from '../ledger/ledger.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { enqueueTransfer, TransferRefusedError } from '../settlement/transfers.ts';

export interface NewPayout {
  accountId: string;
  livemode: boolean;
  amountMinor: bigint;
  toAddress: string;
  reference?: string | null;
  memo?: string | null;
  revenueShareId?: string | null;
  channel: Channel;
  at: Date;
}

/**
 * Records a payout and queues its on-chain transfer, in the caller's transaction: the money moves
 * from the custodial balance to in-flight now, and the settlement worker (the one path that sends
 * tokens) pays it. A balance too small is insufficient_funds and nothing is written.
 */
export async function createPayoutRecord(db: Db, payout: NewPayout): Promise<PayoutRow> {
  const id = newId('po');
  await db
    .insertInto('payouts')
    .values({
      id,
      account_id: payout.accountId,
      livemode: payout.livemode,
      revenue_share_id: payout.revenueShareId ?? null,
      amount_minor: payout.amountMinor,
      asset: SETTLEMENT_CURRENCY.code,
      to_address: payout.toAddress,
      reference: payout.reference ?? null,
      memo: payout.memo ?? null,
      status: 'queued',
      transfer_id: null,
      channel: payout.channel,
      created_at: payout.at,
    })
    .execute();
  let transferId: string;
  try {
    const transfer = await enqueueTransfer(db, {
      kind: payout.revenueShareId ? 'split_leg' : 'payout',
      sourceId: id,
      accountId: payout.accountId,
      livemode: payout.livemode,
      recipient: payout.toAddress,
      amountMinor: payout.amountMinor,
      at: payout.at,
    });
    transferId = transfer.id;
  } catch (error) {
    throw moneyError(error, 'to_address');
  }
  return db
    .updateTable('payouts')
    .set({ transfer_id: transferId })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * A guardrail next to the side effect: tokens sent to the token contract or to our own batch
 * contract are lost for good, so such a recipient is refused before anything is written.
 */
export async function assertSafeRecipient(runtime: Runtime, address: string, param: string): Promise<void> {
  const chain = await runtime.chain();
  const lower = address.toLowerCase();
  if (lower === chain.tokenAddress.toLowerCase() || lower === chain.batchAddress.toLowerCase()) {
    throw new AppError(
      'invalid_request',
      `${param} is a contract of the service (the token or the batch contract); tokens sent there would be lost.`,
      {
        param,
      },
    );
  }
}

/**
 * Test-mode money never becomes real tokens: a test-mode payout or revenue share is refused, before
 * anything is written, on a chain that is not a test network (the settlement worker refuses such a
 * transfer again at the side effect).
 */
export async function assertModeMayPayOut(runtime: Runtime, livemode: boolean): Promise<void> {
  if (livemode) return;
  const chain = await runtime.chain();
  if (!testMoneyMayMoveOn(chain)) {
    throw new AppError(
      'invalid_request',
      `This is a test-mode key, and ${testMoneyRefusal(chain)}. Pay out with a live key, or point CHAIN_RPC_URL at a test network.`,
    );
  }
}

/** Maps ledger and transfer refusals to the API's errors; anything else passes through. */
export function moneyError(error: unknown, recipientParam: string): unknown {
  if (error instanceof InsufficientBalanceError) {
    return new AppError(
      'insufficient_funds',
      'The balance is too low for this amount. Check it with GET /v1/balance.',
      {
        cause: error,
      },
    );
  }
  if (error instanceof TransferRefusedError) {
    return new AppError('invalid_request', `${recipientParam}: ${error.message}`, {
      param: recipientParam,
      cause: error,
    });
  }
  return error;
}

/**
 * An account's custodial balance in the settlement asset (one mode): what is available, and what
 * queued payouts are taking out of it (already deducted from available). The balance tool and the
 * dashboard overview both show this.
 */
export async function custodialBalance(
  db: Db,
  scope: ModeScope,
): Promise<{ availableMinor: bigint; pendingPayoutsMinor: bigint }> {
  const availableMinor = await getLedgerBalance(
    db,
    ledgerAccount.merchant(scope.accountId, scope.livemode, SETTLEMENT_CURRENCY.code),
  );
  const pending = await db
    .selectFrom('payouts')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('amount_minor'), eb.val('0')).as('total'))
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '=', 'queued')
    .executeTakeFirstOrThrow();
  return { availableMinor, pendingPayoutsMinor: BigInt(pending.total) };
}
