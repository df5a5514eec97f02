// record_refund_outcome: the one place a pending rail refund ends. Succeeded keeps it; failed undoes
// exactly what it took (the merchant's share back to the balance, the fee back to the service),
// lowers the payment's refunded amount and status, and announces refund.failed. An ended refund never
// changes again, and another merchant's refund is not found.

import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { expectLedgerBalanced } from '../../test/support/money.ts';
import {
  eventTypes,
  expectRefusedOffSystem,
  pendingPaystackRefund,
  testMode,
} from '../../test/support/system-tools.ts';
import { recordRefundOutcome } from './record-refund-outcome.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
});

async function refundRow(id: string) {
  return runtime.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

function record(accountId: string, input: Record<string, unknown>) {
  return runSystemTool(runtime, recordRefundOutcome, input, testMode(accountId));
}

async function failedPostings(refundId: string): Promise<number> {
  const rows = await runtime.db
    .selectFrom('ledger_postings')
    .select('id')
    .where('kind', '=', 'refund_failed')
    .where('reference', '=', refundId)
    .execute();
  return rows.length;
}

const balanceOf = (accountId: string) => getLedgerBalance(runtime.db, ledgerAccount.merchant(accountId, false, 'USDC'));

describe('record_refund_outcome', () => {
  it('is refused on every channel but system, and the refund stays pending', async () => {
    const merchant = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, merchant.accountId);
    await expectRefusedOffSystem(
      runtime,
      recordRefundOutcome,
      { refund_id: refundId, outcome: 'failed' },
      testMode(merchant.accountId),
    );
    expect((await refundRow(refundId)).status).toBe('pending');
    expect(await failedPostings(refundId)).toBe(0);
  });

  it('succeeded: the refund is done, with the provider reference; nothing else moves', async () => {
    const merchant = await testAccount(runtime);
    const { refundId, paymentId } = await pendingPaystackRefund(runtime, merchant.accountId);
    const balanceBefore = await balanceOf(merchant.accountId);
    const output = await record(merchant.accountId, {
      refund_id: refundId,
      outcome: 'succeeded',
      provider_reference: '3018284',
    });
    expect(output).toEqual({ result: 'recorded', refund_id: refundId, status: 'succeeded' });
    const row = await refundRow(refundId);
    expect(row).toMatchObject({ status: 'succeeded', provider_reference: '3018284' });
    expect(row.completed_at?.toISOString()).toBe(runtime.clock.now().toISOString());
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('refunded');
    expect(await balanceOf(merchant.accountId)).toBe(balanceBefore);
    expect(await eventTypes(runtime, paymentId)).not.toContain('refund.failed');

    // Ended: a later "failed" for it changes nothing.
    const late = await record(merchant.accountId, { refund_id: refundId, outcome: 'failed' });
    expect(late).toEqual({ result: 'duplicate', refund_id: refundId, status: 'succeeded' });
    expect((await refundRow(refundId)).status).toBe('succeeded');
    expect(await failedPostings(refundId)).toBe(0);
  });

  it('failed: undone exactly, the payment settled again and refund.failed announced; the same answer twice undoes once', async () => {
    const merchant = await testAccount(runtime);
    const { refundId, paymentId } = await pendingPaystackRefund(runtime, merchant.accountId);
    const refund = await refundRow(refundId);
    const balanceBefore = await balanceOf(merchant.accountId);
    const fees = ledgerAccount.fees(false, 'USDC');
    const feesBefore = await getLedgerBalance(runtime.db, fees);
    expect((await findPaymentById(runtime.db, paymentId))?.refunded_minor).toBe(refund.amount_minor);

    const input = { refund_id: refundId, outcome: 'failed', reason: 'card closed' };
    expect(await record(merchant.accountId, input)).toEqual({
      result: 'recorded',
      refund_id: refundId,
      status: 'failed',
    });
    expect(await refundRow(refundId)).toMatchObject({ status: 'failed', failure_reason: 'card closed' });
    expect(await balanceOf(merchant.accountId)).toBe(balanceBefore + refund.merchant_debit_minor);
    expect(await getLedgerBalance(runtime.db, fees)).toBe(feesBefore + refund.fee_return_minor);
    const payment = await findPaymentById(runtime.db, paymentId);
    expect(payment).toMatchObject({ status: 'settled', refunded_minor: 0n });
    expect(await eventTypes(runtime, paymentId)).toContain('refund.failed');
    expect(await failedPostings(refundId)).toBe(1);

    const again = await record(merchant.accountId, input);
    expect(again).toEqual({ result: 'duplicate', refund_id: refundId, status: 'failed' });
    expect(await balanceOf(merchant.accountId)).toBe(balanceBefore + refund.merchant_debit_minor);
    expect(await failedPostings(refundId)).toBe(1);
    expect((await eventTypes(runtime, paymentId)).filter((t) => t === 'refund.failed')).toHaveLength(1);
    await expectLedgerBalanced(runtime);
  });

  it("another merchant's refund is not found, and stays pending", async () => {
    const owner = await testAccount(runtime);
    const other = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, owner.accountId);
    await expect(record(other.accountId, { refund_id: refundId, outcome: 'failed' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(
      runSystemTool(
        runtime,
        recordRefundOutcome,
        { refund_id: refundId, outcome: 'succeeded' },
        { accountId: owner.accountId, livemode: true },
      ),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect((await refundRow(refundId)).status).toBe('pending');
    expect(await failedPostings(refundId)).toBe(0);
  });
});
