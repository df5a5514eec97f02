// record_late_success_refund: a late success the rails worker refunded on its provider
// (src/payments/rails/reconcile.ts) is recorded in the payment's action log, once: a compare-and-set
// from `due`, so of two workers only one records it, and never for another merchant's attempt. Its
// rail event names the attempt's own payment and rail, never ones a caller passes.

import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import {
  expectRefusedOffSystem,
  operatorCollection,
  pendingPayment,
  testMode,
} from '../../test/support/system-tools.ts';
import { recordLateSuccessRefund } from './record-late-success-refund.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
});

/** A late success (Paystack unless told) of a payment of the account, due a refund. */
async function lateSuccess(
  accountId: string,
  rail: 'paystack' | 'mpesa' = 'paystack',
): Promise<{ paymentId: string; attemptId: string }> {
  const paymentId = await pendingPayment(runtime, accountId);
  const collectionId = await operatorCollection(runtime, rail, false);
  const attemptId = `att_late${Math.random().toString(36).slice(2, 10)}`;
  await runtime.db
    .insertInto('payment_attempts')
    .values({
      id: attemptId,
      payment_id: paymentId,
      rail,
      outcome: 'succeeded',
      late: true,
      refund_status: 'due',
      collection_id: collectionId,
    })
    .execute();
  return { paymentId, attemptId };
}

const input = (late: { paymentId: string; attemptId: string }) => ({
  attempt_id: late.attemptId,
  refund_reference: '3018284',
});

async function refundStatus(attemptId: string): Promise<string | null> {
  const row = await runtime.db
    .selectFrom('payment_attempts')
    .select('refund_status')
    .where('id', '=', attemptId)
    .executeTakeFirstOrThrow();
  return row.refund_status;
}

describe('record_late_success_refund', () => {
  it('is refused on every channel but system, and the refund stays due', async () => {
    const merchant = await testAccount(runtime);
    const late = await lateSuccess(merchant.accountId);
    await expectRefusedOffSystem(runtime, recordLateSuccessRefund, input(late), testMode(merchant.accountId));
    expect(await refundStatus(late.attemptId)).toBe('due');
  });

  it('records the refund once, with its rail event, in the payment’s action log', async () => {
    const merchant = await testAccount(runtime);
    const late = await lateSuccess(merchant.accountId);
    const first = await runSystemTool(runtime, recordLateSuccessRefund, input(late), testMode(merchant.accountId));
    expect(first).toEqual({ attempt_id: late.attemptId, recorded: true });
    expect(await refundStatus(late.attemptId)).toBe('refunded');
    const second = await runSystemTool(runtime, recordLateSuccessRefund, input(late), testMode(merchant.accountId));
    expect(second).toEqual({ attempt_id: late.attemptId, recorded: false });

    const events = await runtime.db
      .selectFrom('rail_events')
      .select(['rail', 'payment_id', 'kind', 'verdict', 'detail'])
      .where('attempt_id', '=', late.attemptId)
      .execute();
    expect(events).toEqual([
      {
        rail: 'paystack',
        payment_id: late.paymentId,
        kind: 'refund',
        verdict: 'refunded',
        detail: 'Paystack refund 3018284 of the whole amount',
      },
    ]);
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .select(['tool', 'channel'])
      .where('account_id', '=', merchant.accountId)
      .where('tool', '=', 'record_late_success_refund')
      .execute();
    expect(actions).toEqual([
      { tool: 'record_late_success_refund', channel: 'system' },
      { tool: 'record_late_success_refund', channel: 'system' },
    ]);
  });

  it("names the attempt's own payment and rail in its rail event (an M-Pesa late success)", async () => {
    const merchant = await testAccount(runtime);
    const late = await lateSuccess(merchant.accountId, 'mpesa');
    const result = await runSystemTool(runtime, recordLateSuccessRefund, input(late), testMode(merchant.accountId));
    expect(result.recorded).toBe(true);
    const events = await runtime.db
      .selectFrom('rail_events')
      .select(['rail', 'payment_id', 'detail'])
      .where('attempt_id', '=', late.attemptId)
      .execute();
    expect(events).toEqual([
      { rail: 'mpesa', payment_id: late.paymentId, detail: 'M-Pesa refund 3018284 of the whole amount' },
    ]);
  });

  it('takes no payment or rail from its caller: they are the attempt’s', async () => {
    const merchant = await testAccount(runtime);
    const late = await lateSuccess(merchant.accountId);
    const other = await pendingPayment(runtime, merchant.accountId);
    await expect(
      runSystemTool(
        runtime,
        recordLateSuccessRefund,
        { ...input(late), payment_id: other, rail: 'mpesa' },
        testMode(merchant.accountId),
      ),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await refundStatus(late.attemptId)).toBe('due');
  });

  it("never records another merchant's attempt", async () => {
    const owner = await testAccount(runtime);
    const other = await testAccount(runtime);
    const late = await lateSuccess(owner.accountId);
    const result = await runSystemTool(runtime, recordLateSuccessRefund, input(late), testMode(other.accountId));
    expect(result.recorded).toBe(false);
    expect(await refundStatus(late.attemptId)).toBe('due');
  });
});
