// expire_payments: the expiry job's step (src/payments/expiry.ts offers it the lapsed sessions). A
// lapsed pending session expires with its payment.expired event; a paid one, or one whose ttl has
// not lapsed, is left alone; each merchant's action row names only its own sessions.

import { beforeAll, describe, expect, it } from 'vitest';
import { verifyActionLog } from '../../src/audit/action-log.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { expireDuePayments } from '../../src/payments/expiry.ts';
import { paySandbox } from '../../src/payments/sandbox-rail.ts';
import { runSystemTool, systemActor } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { eventTypes, expectRefusedOffSystem, pendingPayment, testMode } from '../../test/support/system-tools.ts';
import { expirePayments } from './expire-payments.ts';

let runtime: TestRuntime;
beforeAll(async () => {
  // A fixed clock: sessions lapse only when a test moves it.
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
});

async function statusOf(paymentId: string) {
  return (await findPaymentById(runtime.db, paymentId))?.status;
}

async function expiryActions(accountId: string) {
  return runtime.db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('tool', '=', 'expire_payments')
    .orderBy('created_at')
    .execute();
}

describe('expire_payments', () => {
  it('is refused on every channel but system, and the lapsed session stays pending', async () => {
    const merchant = await testAccount(runtime);
    const session = await pendingPayment(runtime, merchant.accountId, 1);
    runtime.clock.advance(61_000);
    await expectRefusedOffSystem(
      runtime,
      expirePayments,
      { payment_ids: [session], limit: 10 },
      testMode(merchant.accountId),
    );
    expect(await statusOf(session)).toBe('pending');
    expect(await eventTypes(runtime, session)).not.toContain('payment.expired');
    expect(await expiryActions(merchant.accountId)).toHaveLength(0);
  });

  it('expires lapsed sessions of two merchants, one action each with only its own sessions; paid and unlapsed ones stay', async () => {
    const a = await testAccount(runtime);
    const b = await testAccount(runtime);
    const lapsingA = await pendingPayment(runtime, a.accountId, 1);
    const paidA = await pendingPayment(runtime, a.accountId, 1);
    await paySandbox(runtime, systemActor({ accountId: a.accountId, livemode: false }), paidA, 'succeeded');
    const longA = await pendingPayment(runtime, a.accountId, 60);
    const lapsingB = await pendingPayment(runtime, b.accountId, 1);
    runtime.clock.advance(61_000);

    // Offered everything, as a worker that read a stale list would: the tool re-checks each one.
    const output = await runSystemTool(runtime, expirePayments, {
      payment_ids: [lapsingA, paidA, longA, lapsingB],
      limit: 10,
    });
    expect(output.expired.map((e) => e.payment_id).sort()).toEqual([lapsingA, lapsingB].sort());

    expect(await statusOf(lapsingA)).toBe('expired');
    expect(await statusOf(lapsingB)).toBe('expired');
    expect(await statusOf(paidA)).toBe('paid');
    expect(await statusOf(longA)).toBe('pending');
    expect(await eventTypes(runtime, lapsingA)).toEqual(['payment.expired']);
    expect(await eventTypes(runtime, lapsingB)).toEqual(['payment.expired']);
    expect(await eventTypes(runtime, longA)).toEqual([]);
    expect(await eventTypes(runtime, paidA)).not.toContain('payment.expired');
    const expiredRow = await findPaymentById(runtime.db, lapsingA);
    expect(expiredRow?.expired_at?.toISOString()).toBe(runtime.clock.now().toISOString());

    const [actionA, ...moreA] = await expiryActions(a.accountId);
    const [actionB, ...moreB] = await expiryActions(b.accountId);
    expect(moreA).toEqual([]);
    expect(moreB).toEqual([]);
    expect(actionA).toMatchObject({ channel: 'system', status: 'executed', key_id: null });
    type Logged = {
      input: { payment_ids: string[] };
      result: { expired: { payment_id: string; account_id: string }[] };
    };
    const logged = (row: typeof actionA) => ({ input: row!.input, result: row!.result }) as unknown as Logged;
    // A payment id opens its checkout page: another merchant's never appears in this one's log.
    expect(logged(actionA).input.payment_ids).toEqual([lapsingA]);
    expect(logged(actionA).result.expired).toEqual([
      { payment_id: lapsingA, account_id: a.accountId, livemode: false },
    ]);
    expect(logged(actionB).input.payment_ids).toEqual([lapsingB]);
    expect(logged(actionB).result.expired.map((e) => e.payment_id)).toEqual([lapsingB]);
    expect((await verifyActionLog(runtime.db)).ok).toBe(true);
  });

  it('a second run does nothing: no event, no action', async () => {
    const merchant = await testAccount(runtime);
    const session = await pendingPayment(runtime, merchant.accountId, 1);
    runtime.clock.advance(61_000);
    const first = await runSystemTool(runtime, expirePayments, { payment_ids: [session], limit: 10 });
    expect(first.expired.map((e) => e.payment_id)).toEqual([session]);

    const again = await runSystemTool(runtime, expirePayments, { payment_ids: [session], limit: 10 });
    expect(again.expired).toEqual([]);
    expect(await eventTypes(runtime, session)).toEqual(['payment.expired']);
    expect(await expiryActions(merchant.accountId)).toHaveLength(1);
  });

  it('the worker-side entry expires what lapsed, through the tool', async () => {
    const merchant = await testAccount(runtime);
    const session = await pendingPayment(runtime, merchant.accountId, 1);
    expect(await statusOf(session)).toBe('pending');
    runtime.clock.advance(61_000);
    // Other files' sessions may share this database: loop until the queue of lapsed ones is empty.
    while ((await expireDuePayments(runtime)) > 0);
    expect(await statusOf(session)).toBe('expired');
    expect(await expiryActions(merchant.accountId)).toHaveLength(1);
  });
});
