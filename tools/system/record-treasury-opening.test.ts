// record_treasury_opening: the first sight of a treasury posts its opening balance (treasury ←
// the chain's funding account) once; a second run for the same treasury is refused by the ledger and
// posts nothing. The service's own money: no merchant's action log records it.

import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DuplicatePostingError, getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { expectLedgerBalanced } from '../../test/support/money.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { recordTreasuryOpening } from './record-treasury-opening.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

/** A treasury nobody has seen: its own chain key and contract address. */
function freshTreasury() {
  return {
    chain_key: `devnet-${randomBytes(6).toString('hex')}`,
    batch_address: `0x${randomBytes(20).toString('hex')}`,
    asset: 'USDC',
  };
}

async function openingPostings(reference: string) {
  return runtime.db
    .selectFrom('ledger_postings')
    .selectAll()
    .where('kind', '=', 'treasury_opening')
    .where('reference', '=', reference)
    .execute();
}

async function openingActions(): Promise<number> {
  const rows = await runtime.db
    .selectFrom('agent_actions')
    .select('id')
    .where('tool', '=', 'record_treasury_opening')
    .execute();
  return rows.length;
}

describe('record_treasury_opening', () => {
  it('is refused on every channel but system, and nothing is posted', async () => {
    const merchant = await testAccount(runtime);
    const treasury = freshTreasury();
    await expectRefusedOffSystem(
      runtime,
      recordTreasuryOpening,
      { ...treasury, balance_minor: '1000000' },
      testMode(merchant.accountId),
    );
    const ref = ledgerAccount.treasury(treasury.chain_key, treasury.batch_address, treasury.asset);
    expect(await openingPostings(ref.id)).toEqual([]);
    expect(await getLedgerBalance(runtime.db, ref)).toBe(0n);
  });

  it('the first run posts the opening balance, treasury against the chain funding account, and logs no merchant action', async () => {
    const treasury = freshTreasury();
    const actionsBefore = await openingActions();
    const output = await runSystemTool(runtime, recordTreasuryOpening, { ...treasury, balance_minor: '25000000' });
    const ref = ledgerAccount.treasury(treasury.chain_key, treasury.batch_address, treasury.asset);
    expect(output).toEqual({ treasury: ref.id, opened: true, balance_minor: '25000000' });
    // The id is lower-cased: one treasury whatever the address's checksum casing.
    expect(ref.id).toBe(`treasury:${treasury.chain_key}:${treasury.batch_address.toLowerCase()}:USDC`);

    const [posting, ...more] = await openingPostings(ref.id);
    expect(more).toEqual([]);
    const entries = await runtime.db
      .selectFrom('ledger_entries')
      .select(['account_id', 'amount_minor'])
      .where('posting_id', '=', posting!.id)
      .orderBy('account_id')
      .execute();
    expect(entries).toEqual([
      { account_id: `funding:${treasury.chain_key}:USDC`, amount_minor: -25_000_000n },
      { account_id: ref.id, amount_minor: 25_000_000n },
    ]);
    expect(await getLedgerBalance(runtime.db, ref)).toBe(25_000_000n);
    expect(await openingActions()).toBe(actionsBefore);
    await expectLedgerBalanced(runtime);
  });

  it('a second run for the same treasury throws DuplicatePostingError and posts nothing', async () => {
    const treasury = freshTreasury();
    await runSystemTool(runtime, recordTreasuryOpening, { ...treasury, balance_minor: '5000000' });
    const ref = ledgerAccount.treasury(treasury.chain_key, treasury.batch_address, treasury.asset);
    const funding = ledgerAccount.funding(treasury.chain_key, 'USDC');
    const fundingBefore = await getLedgerBalance(runtime.db, funding);
    // The same contract with its address cased otherwise is the same treasury.
    const again = runSystemTool(runtime, recordTreasuryOpening, {
      ...treasury,
      batch_address: treasury.batch_address.toUpperCase().replace('0X', '0x'),
      balance_minor: '9000000',
    });
    await expect(again).rejects.toBeInstanceOf(DuplicatePostingError);
    expect(await openingPostings(ref.id)).toHaveLength(1);
    expect(await getLedgerBalance(runtime.db, ref)).toBe(5_000_000n);
    expect(await getLedgerBalance(runtime.db, funding)).toBe(fundingBefore);
    expect(await openingActions()).toBe(0);
    await expectLedgerBalanced(runtime);
  });
});
