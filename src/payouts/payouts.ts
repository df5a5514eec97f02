import { testMoneyMayMoveOn, testMoneyRefusal } from '../chain/test-networks.ts';
import { AppError } from '../core/errors.ts';
import type { ToolServices } from '../core/tool.ts';
import type { Db, ModeScope } from '../db/database.ts';
import { sumQueuedPayouts } from '../db/repositories/payouts.ts';
import { getLedgerBalance, ledgerAccount } from '../ledger/ledger.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { isServiceContract } from '../domain/recipients.ts';

/**
 * A guardrail next to the side effect: tokens sent to the token contract or to our own batch
 * contract are lost for good, so such a recipient is refused before anything is written.
 */
export async function assertSafeRecipient(
  runtime: Pick<ToolServices, 'chain'>,
  address: string,
  param: string,
): Promise<void> {
  if (isServiceContract(address, await runtime.chain())) {
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
export async function assertModeMayPayOut(runtime: Pick<ToolServices, 'chain'>, livemode: boolean): Promise<void> {
  if (livemode) return;
  const chain = await runtime.chain();
  if (!testMoneyMayMoveOn(chain)) {
    throw new AppError(
      'invalid_request',
      `This is a test-mode key, and ${testMoneyRefusal(chain)}. Pay out with a live key, or point CHAIN_RPC_URL at a test network.`,
    );
  }
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
  return { availableMinor, pendingPayoutsMinor: await sumQueuedPayouts(db, scope) };
}
