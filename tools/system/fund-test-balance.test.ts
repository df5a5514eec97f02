// fund_test_balance: test USDC into a test-mode custodial balance, out of what the chain's treasury
// was funded with (the chain's funding account), so that a test payout of it is paid in real test
// tokens. Test mode only; never more than the funding holds; one action on the system channel.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../../src/chain/chain.ts';
import { getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import type { Runtime } from '../../src/runtime.ts';
import { type ChainSession, openChainSession } from '../../src/settlement/chain-session.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectLedgerBalanced } from '../../test/support/money.ts';
import { settlementRuntime } from '../../test/support/settlement.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { fundTestBalance } from './fund-test-balance.ts';

let chain: ChainConnection;
let runtime: Runtime;
let session: ChainSession;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  // The session posts the treasury's opening balance: what the funding account can give out.
  session = await openChainSession(runtime, chain);
});

afterAll(async () => {
  await chain?.close();
});

const funding = () => ledgerAccount.funding(session.key, 'USDC');
const balanceOf = (accountId: string) => getLedgerBalance(runtime.db, ledgerAccount.merchant(accountId, false, 'USDC'));

async function fundingActions(accountId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('tool', '=', 'fund_test_balance')
    .execute();
}

async function fundingPostings(): Promise<number> {
  const rows = await runtime.db.selectFrom('ledger_postings').select('id').where('kind', '=', 'test_funding').execute();
  return rows.length;
}

describe('fund_test_balance', () => {
  it('is refused on every channel but system, and nothing moves', async () => {
    const merchant = await testAccount(runtime);
    await expectRefusedOffSystem(
      runtime,
      fundTestBalance,
      { amount_minor: '1000000', chain_key: session.key },
      testMode(merchant.accountId),
    );
    expect(await balanceOf(merchant.accountId)).toBe(0n);
    expect(await fundingActions(merchant.accountId)).toEqual([]);
  });

  it("moves test USDC from the chain's funding into the test balance, logged once on the system channel", async () => {
    const merchant = await testAccount(runtime);
    const fundingBefore = await getLedgerBalance(runtime.db, funding());
    expect(fundingBefore).toBeGreaterThan(25_000_000n);

    const output = await runSystemTool(
      runtime,
      fundTestBalance,
      { amount_minor: '25000000', chain_key: session.key },
      { accountId: merchant.accountId, livemode: false },
    );
    expect(output).toMatchObject({ amount_minor: '25000000', available_minor: '25000000' });
    expect(output.id).toMatch(/^fund_/);
    expect(await balanceOf(merchant.accountId)).toBe(25_000_000n);
    expect(await getLedgerBalance(runtime.db, funding())).toBe(fundingBefore - 25_000_000n);
    const [logged, ...others] = await fundingActions(merchant.accountId);
    expect(others).toEqual([]);
    expect(logged).toMatchObject({ channel: 'system', status: 'executed', key_id: null, livemode: false });

    // A second funding adds to what is there.
    const more = await runSystemTool(
      runtime,
      fundTestBalance,
      { amount_minor: '5000000', chain_key: session.key },
      { accountId: merchant.accountId, livemode: false },
    );
    expect(more.available_minor).toBe('30000000');

    expect(await fundingActions(merchant.accountId)).toHaveLength(2);
    await expectLedgerBalanced(runtime);
  });

  it('refuses a live-mode balance: nothing written', async () => {
    const merchant = await testAccount(runtime);
    const postingsBefore = await fundingPostings();
    await expect(
      runSystemTool(
        runtime,
        fundTestBalance,
        { amount_minor: '1000000', chain_key: session.key },
        { accountId: merchant.accountId, livemode: true },
      ),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await getLedgerBalance(runtime.db, ledgerAccount.merchant(merchant.accountId, true, 'USDC'))).toBe(0n);
    expect(await fundingPostings()).toBe(postingsBefore);
    expect(await fundingActions(merchant.accountId)).toEqual([]);
  });

  it('insufficient_funds when the funding cannot cover it: nothing written', async () => {
    const merchant = await testAccount(runtime);
    const fundingBefore = await getLedgerBalance(runtime.db, funding());
    const postingsBefore = await fundingPostings();
    await expect(
      runSystemTool(
        runtime,
        fundTestBalance,
        { amount_minor: (fundingBefore + 1n).toString(), chain_key: session.key },
        { accountId: merchant.accountId, livemode: false },
      ),
    ).rejects.toMatchObject({ code: 'insufficient_funds' });
    // A chain nobody opened has no funding at all.
    await expect(
      runSystemTool(
        runtime,
        fundTestBalance,
        { amount_minor: '1', chain_key: 'devnet:0:never-opened' },
        { accountId: merchant.accountId, livemode: false },
      ),
    ).rejects.toMatchObject({ code: 'insufficient_funds' });
    expect(await balanceOf(merchant.accountId)).toBe(0n);
    expect(await getLedgerBalance(runtime.db, funding())).toBe(fundingBefore);
    expect(await fundingPostings()).toBe(postingsBefore);
    expect(await fundingActions(merchant.accountId)).toEqual([]);
  });
});
