// start_payment_settlements, and what every system tool shares through the pipeline: it runs only on
// the `system` channel, and a run that acts for several merchants is one action per merchant in the
// action log, each with its own part of the result and nothing of another's.

import { beforeAll, describe, expect, it } from 'vitest';
import { lockAccountActions, verifyActionLog } from '../../src/audit/action-log.ts';
import { executeTool } from '../../src/pipeline/execute-tool.ts';
import { systemActor } from '../../src/pipeline/system-runs.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { checkLedgerInvariants, getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { settlePaidPayments } from '../../src/settlement/payment-settlement.ts';
import { settlesBeforeHang } from '../../test/support/hang.ts';
import { isPostgres, testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { createPaidPayments } from '../../test/support/settlement-fixtures.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { startPaymentSettlements } from './start-payment-settlements.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime();
});

/** The account's actions on the system channel, oldest first. */
async function systemActions(accountId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('channel', '=', 'system')
    .where('tool', '=', 'start_payment_settlements')
    .orderBy('created_at')
    .execute();
}

describe('start_payment_settlements', () => {
  it('is refused on every channel but system, and nothing moves', async () => {
    const merchant = await testAccount(runtime);
    const [paid] = await createPaidPayments(runtime, merchant.accountId, [{ amount: 5000, currency: 'NGN' }]);
    await expectRefusedOffSystem(
      runtime,
      startPaymentSettlements,
      { payment_ids: [paid!.id], limit: 10, test_money_on_chain: false },
      testMode(merchant.accountId),
    );
    expect((await findPaymentById(runtime.db, paid!.id))?.status).toBe('paid');
  });

  it('settles two merchants in one run: one system action each, with only its own payments', async () => {
    const a = await testAccount(runtime);
    const b = await testAccount(runtime);
    // No payout address: each settles into its merchant's custodial balance in this run.
    const paidA = await createPaidPayments(runtime, a.accountId, [
      { amount: 5000, currency: 'NGN' },
      { amount: 7000, currency: 'NGN' },
    ]);
    const paidB = await createPaidPayments(runtime, b.accountId, [{ amount: 100, currency: 'KES' }]);

    let taken = 0;
    for (let n = await intake(); n > 0; n = await intake()) taken += n;
    expect(taken).toBeGreaterThanOrEqual(3);

    for (const p of [...paidA, ...paidB]) {
      const row = await findPaymentById(runtime.db, p.id);
      expect(row?.status).toBe('settled');
      expect(row?.settlement_destination).toBe('balance');
    }
    const balanceOf = (accountId: string) =>
      getLedgerBalance(runtime.db, ledgerAccount.merchant(accountId, false, 'USDC'));
    expect(await balanceOf(a.accountId)).toBe(paidA[0]!.settlement_minor + paidA[1]!.settlement_minor);
    expect(await balanceOf(b.accountId)).toBe(paidB[0]!.settlement_minor);

    const [actionA] = await systemActions(a.accountId);
    const [actionB] = await systemActions(b.accountId);
    expect(actionA).toMatchObject({ status: 'executed', decision: 'not_checked', key_id: null });
    type Result = { settlements: { payment_id: string; account_id: string }[] };
    const resultA = actionA!.result as unknown as Result;
    const resultB = actionB!.result as unknown as Result;
    expect(resultA.settlements.map((s) => s.payment_id).sort()).toEqual(paidA.map((p) => p.id).sort());
    expect(resultB.settlements.map((s) => s.payment_id)).toEqual([paidB[0]!.id]);
    expect(resultA.settlements.every((s) => s.account_id === a.accountId)).toBe(true);
    // Each row's input names only that merchant's payments: a payment id opens its checkout page.
    const inputOf = (row: typeof actionA) => (row!.input as unknown as { payment_ids: string[] }).payment_ids;
    expect(inputOf(actionA).sort()).toEqual(paidA.map((p) => p.id).sort());
    expect(inputOf(actionB)).toEqual([paidB[0]!.id]);
    expect(actionA!.amount_settlement_minor).toBe(paidA[0]!.settlement_minor + paidA[1]!.settlement_minor);

    expect((await checkLedgerInvariants(runtime.db)).problems).toEqual([]);
    expect((await verifyActionLog(runtime.db)).ok).toBe(true);
  });

  it('a second run finds nothing to take and writes no action', async () => {
    const merchant = await testAccount(runtime);
    const [paid] = await createPaidPayments(runtime, merchant.accountId, [{ amount: 5000, currency: 'NGN' }]);
    while ((await intake()) > 0);
    const before = await systemActions(merchant.accountId);
    expect(before).toHaveLength(1);
    // Offered again by a worker that read it before the first run committed: already settled.
    const again = await executeTool(
      startPaymentSettlements,
      { payment_ids: [paid!.id], limit: 10, test_money_on_chain: false },
      { runtime, actor: systemActor() },
    );
    expect(again).toMatchObject({ kind: 'executed', output: { taken: 0, settlements: [] } });
    expect(await systemActions(merchant.accountId)).toHaveLength(1);
  });
});

describe('start_payment_settlements among concurrent calls (Postgres: real concurrency)', () => {
  it.skipIf(!isPostgres)(
    "never waits for a merchant's action-log lock: settles the others and leaves that merchant's payments for the next run",
    async () => {
      const a = await testAccount(runtime);
      const b = await testAccount(runtime);
      const [paidA] = await createPaidPayments(runtime, a.accountId, [{ amount: 5000, currency: 'NGN' }]);
      const [paidB] = await createPaidPayments(runtime, b.accountId, [{ amount: 7000, currency: 'NGN' }]);
      // A merchant's money call in flight: it holds A's action-log lock and will want A's payment
      // (a refund does), which the run locks first. Waiting for A's lock here would deadlock.
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding!: () => void;
      const held = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const call = runtime.db.transaction().execute(async (trx) => {
        await lockAccountActions(trx, a.accountId);
        holding();
        await released;
      });
      await held;
      const run = await settlesBeforeHang(intake());
      release();
      await call;
      if (!run.settled) throw new Error('the run waited for a lock a merchant call held');
      expect((await findPaymentById(runtime.db, paidB!.id))?.status).toBe('settled');
      expect((await findPaymentById(runtime.db, paidA!.id))?.status).toBe('paid');
      expect(await systemActions(a.accountId)).toHaveLength(0);
      // The next run, with the lock free, takes A's payment.
      while ((await intake()) > 0);
      expect((await findPaymentById(runtime.db, paidA!.id))?.status).toBe('settled');
      expect(await systemActions(a.accountId)).toHaveLength(1);
    },
  );
});

function intake(): Promise<number> {
  return settlePaidPayments(runtime, { chunk: 100, testModeOnChain: async () => false });
}
