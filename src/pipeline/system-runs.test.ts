// runSystemToolIn: a system run inside the caller's open transaction commits with it and rolls back
// with it (the worker's write and the tool's are one). Refused there, before anything is written: a
// tool that is not a system tool, one that acts for an account (its action-log lock would come
// after the caller's row locks), and one with a precheck (it reads outside the caller's transaction).

import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { getLedgerBalance, ledgerAccount } from '../ledger/ledger.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { createPayment } from '../../tools/create-payment.ts';
import { fundTestBalance } from '../../tools/system/fund-test-balance.ts';
import { recordTreasuryOpening } from '../../tools/system/record-treasury-opening.ts';
import { runSystemToolIn, systemActor } from './system-runs.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

/** A treasury nobody has seen, and the opening its first sight posts. */
function freshOpening() {
  const opening = {
    chain_key: `devnet-${randomBytes(6).toString('hex')}`,
    batch_address: `0x${randomBytes(20).toString('hex')}`,
    asset: 'USDC',
    balance_minor: '1000000',
  };
  return { opening, treasury: ledgerAccount.treasury(opening.chain_key, opening.batch_address, opening.asset) };
}

class CallerFailed extends Error {}

describe('runSystemToolIn', () => {
  it("commits with the caller's transaction", async () => {
    const { opening, treasury } = freshOpening();
    await runtime.db.transaction().execute(async (trx) => {
      await runSystemToolIn(trx, runtime, recordTreasuryOpening, opening);
      // The run wrote in the caller's transaction: the caller sees its posting before it commits.
      expect(await getLedgerBalance(trx, treasury)).toBe(1_000_000n);
    });
    expect(await getLedgerBalance(runtime.db, treasury)).toBe(1_000_000n);
  });

  it("rolls back with the caller's transaction when the caller fails after the run", async () => {
    const { opening, treasury } = freshOpening();
    await expect(
      runtime.db.transaction().execute(async (trx) => {
        await runSystemToolIn(trx, runtime, recordTreasuryOpening, opening);
        throw new CallerFailed('the caller failed after the run');
      }),
    ).rejects.toBeInstanceOf(CallerFailed);
    expect(await getLedgerBalance(runtime.db, treasury)).toBe(0n);
  });

  it('refuses a tool that is not a system tool, before it writes', async () => {
    const merchant = await testAccount(runtime);
    await expect(
      runtime.db
        .transaction()
        .execute((trx) =>
          runSystemToolIn(
            trx,
            runtime,
            createPayment,
            { amount: 5000, currency: 'NGN' },
            systemActor({ accountId: merchant.accountId, livemode: false }),
          ),
        ),
    ).rejects.toThrow(/not a system tool/);
    expect(
      await runtime.db.selectFrom('payments').select('id').where('account_id', '=', merchant.accountId).execute(),
    ).toEqual([]);
  });

  it('refuses a tool that acts for an account, before it writes', async () => {
    const merchant = await testAccount(runtime);
    const balance = ledgerAccount.merchant(merchant.accountId, false, 'USDC');
    await expect(
      runtime.db
        .transaction()
        .execute((trx) =>
          runSystemToolIn(
            trx,
            runtime,
            fundTestBalance,
            { amount_minor: '5000000', chain_key: 'devnet-test' },
            systemActor({ accountId: merchant.accountId, livemode: false }),
          ),
        ),
    ).rejects.toThrow(/cannot run in its caller's transaction/);
    expect(await getLedgerBalance(runtime.db, balance)).toBe(0n);
  });

  it('refuses a system tool with a precheck, before the precheck waits on the held connection', async () => {
    let prechecked = false;
    const withPrecheck = {
      ...recordTreasuryOpening,
      precheck: async () => {
        prechecked = true;
      },
    };
    const { opening, treasury } = freshOpening();
    await expect(
      runtime.db.transaction().execute((trx) => runSystemToolIn(trx, runtime, withPrecheck, opening)),
    ).rejects.toThrow(/has a precheck/);
    expect(prechecked).toBe(false);
    expect(await getLedgerBalance(runtime.db, treasury)).toBe(0n);
  });
});
