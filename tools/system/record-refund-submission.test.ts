// record_refund_submission: the steps of sending a pending Paystack refund (src/payments/rails/
// refunds.ts). `sending` is a compare-and-set on when it was last sent, so of two workers that read
// the same row only one sends; `accepted` keeps the provider's reference. Neither moves money, and
// neither touches another merchant's refund.

import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { getLedgerBalance, ledgerAccount } from '../../src/ledger/ledger.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, pendingPaystackRefund, testMode } from '../../test/support/system-tools.ts';
import { recordRefundSubmission } from './record-refund-submission.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
});

async function refundRow(id: string) {
  return runtime.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

function submit(accountId: string, input: Record<string, unknown>) {
  return runSystemTool(runtime, recordRefundSubmission, input, testMode(accountId));
}

describe('record_refund_submission', () => {
  it('is refused on every channel but system, and the refund is not marked sent', async () => {
    const merchant = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, merchant.accountId);
    await expectRefusedOffSystem(
      runtime,
      recordRefundSubmission,
      { refund_id: refundId, step: 'sending', last_sent_at: null },
      testMode(merchant.accountId),
    );
    expect((await refundRow(refundId)).submitted_at).toBeNull();
  });

  it('sending: of two workers that read the same row only one may send; a resend needs the new reading', async () => {
    const merchant = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, merchant.accountId);
    const balance = ledgerAccount.merchant(merchant.accountId, false, 'USDC');
    const balanceBefore = await getLedgerBalance(runtime.db, balance);

    const first = await submit(merchant.accountId, { refund_id: refundId, step: 'sending', last_sent_at: null });
    expect(first).toEqual({ refund_id: refundId, recorded: true });
    const sentAt = (await refundRow(refundId)).submitted_at;
    expect(sentAt?.toISOString()).toBe(runtime.clock.now().toISOString());

    // The second worker read the row before the first marked it: never sent.
    runtime.clock.advance(5_000);
    const second = await submit(merchant.accountId, { refund_id: refundId, step: 'sending', last_sent_at: null });
    expect(second).toEqual({ refund_id: refundId, recorded: false });
    expect((await refundRow(refundId)).submitted_at?.toISOString()).toBe(sentAt!.toISOString());

    // A later worker that read the first send may resend; one with that same reading after it may not.
    const resend = await submit(merchant.accountId, {
      refund_id: refundId,
      step: 'sending',
      last_sent_at: sentAt!.toISOString(),
    });
    expect(resend.recorded).toBe(true);
    const stale = await submit(merchant.accountId, {
      refund_id: refundId,
      step: 'sending',
      last_sent_at: sentAt!.toISOString(),
    });
    expect(stale.recorded).toBe(false);
    expect((await refundRow(refundId)).submitted_at?.toISOString()).toBe(runtime.clock.now().toISOString());

    // Neither step moves money: it left the balance when the refund was created.
    expect(await getLedgerBalance(runtime.db, balance)).toBe(balanceBefore);
    expect((await refundRow(refundId)).status).toBe('pending');
  });

  it('accepted: keeps the provider reference, and needs one', async () => {
    const merchant = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, merchant.accountId);
    await expect(submit(merchant.accountId, { refund_id: refundId, step: 'accepted' })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect((await refundRow(refundId)).provider_reference).toBeNull();

    const accepted = await submit(merchant.accountId, {
      refund_id: refundId,
      step: 'accepted',
      provider_reference: '3018284',
    });
    expect(accepted).toEqual({ refund_id: refundId, recorded: true });
    expect(await refundRow(refundId)).toMatchObject({ provider_reference: '3018284', status: 'pending' });
  });

  it("provider_status: keeps the provider's word while the refund is pending, and needs one", async () => {
    const merchant = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, merchant.accountId);
    await expect(submit(merchant.accountId, { refund_id: refundId, step: 'provider_status' })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    const balance = ledgerAccount.merchant(merchant.accountId, false, 'USDC');
    const balanceBefore = await getLedgerBalance(runtime.db, balance);
    const noted = await submit(merchant.accountId, {
      refund_id: refundId,
      step: 'provider_status',
      provider_status: 'needs-attention',
    });
    expect(noted).toEqual({ refund_id: refundId, recorded: true });
    expect(await refundRow(refundId)).toMatchObject({ provider_status: 'needs-attention', status: 'pending' });
    expect(await getLedgerBalance(runtime.db, balance)).toBe(balanceBefore);
    // Once the refund has ended, the provider's word for it no longer changes here.
    await runtime.db.updateTable('refunds').set({ status: 'succeeded' }).where('id', '=', refundId).execute();
    const late = await submit(merchant.accountId, {
      refund_id: refundId,
      step: 'provider_status',
      provider_status: 'processing',
    });
    expect(late.recorded).toBe(false);
    expect((await refundRow(refundId)).provider_status).toBe('needs-attention');
  });

  it("another merchant's refund is not touched", async () => {
    const owner = await testAccount(runtime);
    const other = await testAccount(runtime);
    const { refundId } = await pendingPaystackRefund(runtime, owner.accountId);
    const sending = await submit(other.accountId, { refund_id: refundId, step: 'sending', last_sent_at: null });
    expect(sending.recorded).toBe(false);
    const accepted = await submit(other.accountId, {
      refund_id: refundId,
      step: 'accepted',
      provider_reference: 'hijack',
    });
    expect(accepted.recorded).toBe(false);
    const status = await submit(other.accountId, {
      refund_id: refundId,
      step: 'provider_status',
      provider_status: 'failed',
    });
    expect(status.recorded).toBe(false);
    // Nor the owner's own refund seen from live mode.
    const live = await runSystemTool(
      runtime,
      recordRefundSubmission,
      { refund_id: refundId, step: 'sending', last_sent_at: null },
      { accountId: owner.accountId, livemode: true },
    );
    expect(live.recorded).toBe(false);
    expect(await refundRow(refundId)).toMatchObject({
      submitted_at: null,
      provider_reference: null,
      provider_status: null,
    });
  });
});
