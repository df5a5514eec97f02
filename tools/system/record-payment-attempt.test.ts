// record_payment_attempt: the one place a payment becomes paid. A provider success pays only what
// the provider confirmed matches the attempt; an unknown answer keeps the attempt open; anything else
// ends the attempt and the payment is payable again; a success after the attempt was given up is a late success, refunded, never
// dropped; the same answer twice pays once. The sandbox answers synchronously, without an attempt id.

import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { paystackReference } from '../../src/domain/provider-references.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { MPESA_APP, operatorCollects, PAYSTACK_TEST_KEY } from '../../test/support/rails.ts';
import { eventTypes, expectRefusedOffSystem, pendingPayment, testMode } from '../../test/support/system-tools.ts';
import { expirePayments } from './expire-payments.ts';
import { recordPaymentAttempt } from './record-payment-attempt.ts';
import { startPaymentAttempt } from './start-payment-attempt.ts';

let runtime: TestRuntime;
/** The operator's instance-wide test-mode collection accounts. */
const COLLECTION = { paystack: '', mpesa: '' };
beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
  COLLECTION.paystack = (await operatorCollects(runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY })).id;
  COLLECTION.mpesa = (await operatorCollects(runtime, 'mpesa', MPESA_APP)).id;
});

/** A payment with a Paystack attempt in flight; returns the ids and what Paystack would confirm. */
async function inFlight(accountId: string, ttlMinutes = 30) {
  const paymentId = await pendingPayment(runtime, accountId, ttlMinutes);
  const started = await runSystemTool(
    runtime,
    startPaymentAttempt,
    { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
    testMode(accountId),
  );
  const confirmed = {
    amount_minor: started.amount_minor,
    currency: started.currency,
    reference: paystackReference(started.attempt_id),
    receipt: 'T123',
  };
  return { paymentId, attemptId: started.attempt_id, confirmed };
}

function record(accountId: string, input: Record<string, unknown>) {
  return runSystemTool(runtime, recordPaymentAttempt, input, testMode(accountId));
}

async function statusOf(paymentId: string) {
  return (await findPaymentById(runtime.db, paymentId))?.status;
}

async function attempt(attemptId: string) {
  return runtime.db.selectFrom('payment_attempts').selectAll().where('id', '=', attemptId).executeTakeFirstOrThrow();
}

describe('record_payment_attempt', () => {
  it('is refused on every channel but system, and pays nothing', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId);
    await expectRefusedOffSystem(
      runtime,
      recordPaymentAttempt,
      { payment_id: paymentId, attempt_id: attemptId, rail: 'paystack', outcome: 'succeeded', confirmed },
      testMode(merchant.accountId),
    );
    expect(await statusOf(paymentId)).toBe('processing');
    expect((await attempt(attemptId)).outcome).toBe('pending');
    expect(await eventTypes(runtime, paymentId)).toEqual([]);
  });

  it('a confirmed success pays the payment once; the same answer again is a duplicate', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId);
    const input = { payment_id: paymentId, attempt_id: attemptId, rail: 'paystack', outcome: 'succeeded', confirmed };
    const first = await record(merchant.accountId, input);
    expect(first).toMatchObject({ result: 'paid', attempt_id: attemptId, outcome: 'succeeded' });
    expect(first.payment.status).toBe('paid');
    expect(await statusOf(paymentId)).toBe('paid');
    expect(await attempt(attemptId)).toMatchObject({ outcome: 'succeeded', provider_receipt: 'T123', late: false });

    const again = await record(merchant.accountId, input);
    expect(again).toMatchObject({ result: 'duplicate', outcome: 'succeeded' });
    expect(await eventTypes(runtime, paymentId)).toEqual(['payment.paid']);
  });

  it('a success with a fee the payer paid on top pays what was asked, and keeps the fee apart on the attempt', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId);
    const paid = await record(merchant.accountId, {
      payment_id: paymentId,
      attempt_id: attemptId,
      rail: 'paystack',
      outcome: 'succeeded',
      confirmed: { ...confirmed, payer_fee_minor: '10283' },
    });
    expect(paid).toMatchObject({ result: 'paid', outcome: 'succeeded' });
    expect(await attempt(attemptId)).toMatchObject({
      outcome: 'succeeded',
      payer_fee_minor: 10283n,
      refund_status: null,
    });
    expect(await eventTypes(runtime, paymentId)).toEqual(['payment.paid']);
  });

  it('a success whose confirmed amount differs, or with no confirmation, is flagged: nothing paid, the payer refunded', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId);
    const short = (BigInt(confirmed.amount_minor) - 1n).toString();
    const output = await record(merchant.accountId, {
      payment_id: paymentId,
      attempt_id: attemptId,
      rail: 'paystack',
      outcome: 'succeeded',
      confirmed: { ...confirmed, amount_minor: short },
    });
    expect(output.result).toBe('flagged');
    // The payment is payable again; the money Paystack took goes back to the payer automatically.
    expect(await statusOf(paymentId)).toBe('pending');
    const row = await attempt(attemptId);
    expect(row).toMatchObject({ outcome: 'flagged', refund_status: 'due' });
    expect(row.failure_reason).toMatch(/amount/);
    expect(await eventTypes(runtime, paymentId)).toEqual([]);

    // A success without any provider confirmation is flagged too.
    const second = await inFlight(merchant.accountId);
    const bare = await record(merchant.accountId, {
      payment_id: second.paymentId,
      attempt_id: second.attemptId,
      rail: 'paystack',
      outcome: 'succeeded',
    });
    expect(bare.result).toBe('flagged');
    expect(await statusOf(second.paymentId)).toBe('pending');
  });

  it('an abandoned attempt ends and the payment is payable again; a later success of it is late, never paid', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId, 1);
    const declined = await record(merchant.accountId, {
      payment_id: paymentId,
      attempt_id: attemptId,
      rail: 'paystack',
      outcome: 'abandoned',
    });
    expect(declined).toMatchObject({ result: 'ended', outcome: 'abandoned' });
    expect(await statusOf(paymentId)).toBe('pending');
    // The same end twice changes nothing.
    expect(
      (
        await record(merchant.accountId, {
          payment_id: paymentId,
          attempt_id: attemptId,
          rail: 'paystack',
          outcome: 'declined',
        })
      ).result,
    ).toBe('duplicate');
    expect((await attempt(attemptId)).outcome).toBe('abandoned');

    // The session lapses and expires; then Paystack reports that the payer did pay after all.
    runtime.clock.advance(61_000);
    await runSystemTool(runtime, expirePayments, { payment_ids: [paymentId], limit: 1 });
    expect(await statusOf(paymentId)).toBe('expired');
    const late = await record(merchant.accountId, {
      payment_id: paymentId,
      attempt_id: attemptId,
      rail: 'paystack',
      outcome: 'succeeded',
      confirmed,
    });
    expect(late.result).toBe('late');
    expect(await statusOf(paymentId)).toBe('expired');
    expect(await attempt(attemptId)).toMatchObject({ outcome: 'succeeded', late: true, refund_status: 'due' });
    expect(await eventTypes(runtime, paymentId)).toEqual(['payment.expired', 'payment.late_success']);
  });

  it("unknown keeps an attempt open: the payment stays processing, no second attempt starts, and the provider's answer applies later", async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    const { attempt_id: attemptId } = await runSystemTool(
      runtime,
      startPaymentAttempt,
      { payment_id: paymentId, rail: 'mpesa', collection_id: COLLECTION.mpesa },
      testMode(merchant.accountId),
    );
    const unknown = { payment_id: paymentId, attempt_id: attemptId, rail: 'mpesa', outcome: 'unknown' };
    const first = await record(merchant.accountId, { ...unknown, reason: 'M-Pesa did not confirm the push: HTTP 503' });
    expect(first).toMatchObject({ result: 'unknown', outcome: 'unknown' });
    expect(await attempt(attemptId)).toMatchObject({
      outcome: 'unknown',
      failure_reason: 'M-Pesa did not confirm the push: HTTP 503',
      completed_at: null,
    });
    expect(await statusOf(paymentId)).toBe('processing');
    expect((await record(merchant.accountId, unknown)).result).toBe('duplicate');
    await expect(
      runSystemTool(
        runtime,
        startPaymentAttempt,
        { payment_id: paymentId, rail: 'mpesa', collection_id: COLLECTION.mpesa },
        testMode(merchant.accountId),
      ),
    ).rejects.toMatchObject({ code: 'conflict' });

    // Daraja answers at last: the payer paid. Paid as from any attempt in flight, not late.
    await runtime.db
      .updateTable('payment_attempts')
      .set({ provider_reference: 'ws_CO_0105202612000000012345678' })
      .where('id', '=', attemptId)
      .execute();
    const paid = await record(merchant.accountId, {
      ...unknown,
      outcome: 'succeeded',
      confirmed: { amount_minor: '500000', currency: 'NGN', reference: 'ws_CO_0105202612000000012345678' },
    });
    expect(paid).toMatchObject({ result: 'paid', outcome: 'succeeded' });
    expect(await attempt(attemptId)).toMatchObject({ outcome: 'succeeded', late: false });
    // An ended attempt is never made unknown again.
    expect((await record(merchant.accountId, unknown)).result).toBe('duplicate');
    expect(await eventTypes(runtime, paymentId)).toEqual(['payment.paid']);
  });

  it('the sandbox answers synchronously: paid at once, or declined and still payable', async () => {
    const merchant = await testAccount(runtime);
    const paid = await pendingPayment(runtime, merchant.accountId);
    const output = await record(merchant.accountId, { payment_id: paid, rail: 'sandbox', outcome: 'succeeded' });
    expect(output).toMatchObject({ result: 'paid', outcome: 'succeeded' });
    expect(await statusOf(paid)).toBe('paid');
    expect(await eventTypes(runtime, paid)).toEqual(['payment.paid']);
    // Paid already: a second sandbox payment of it is refused.
    await expect(
      record(merchant.accountId, { payment_id: paid, rail: 'sandbox', outcome: 'succeeded' }),
    ).rejects.toMatchObject({ code: 'conflict' });

    const declined = await pendingPayment(runtime, merchant.accountId);
    const no = await record(merchant.accountId, { payment_id: declined, rail: 'sandbox', outcome: 'declined' });
    expect(no).toMatchObject({ result: 'ended', outcome: 'declined' });
    expect(await statusOf(declined)).toBe('pending');

    // Only the sandbox answers without an attempt.
    await expect(
      record(merchant.accountId, { payment_id: declined, rail: 'paystack', outcome: 'succeeded' }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await statusOf(declined)).toBe('pending');
  });

  it("another merchant's payment is not found, and its attempt is untouched", async () => {
    const owner = await testAccount(runtime);
    const other = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(owner.accountId);
    await expect(
      record(other.accountId, {
        payment_id: paymentId,
        attempt_id: attemptId,
        rail: 'paystack',
        outcome: 'succeeded',
        confirmed,
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    // Nor is an attempt found under a rail it was not made on.
    await expect(
      record(owner.accountId, {
        payment_id: paymentId,
        attempt_id: attemptId,
        rail: 'mpesa',
        outcome: 'succeeded',
        confirmed,
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect(await statusOf(paymentId)).toBe('processing');
    expect((await attempt(attemptId)).outcome).toBe('pending');
  });

  it('a success collected into a merchant-owned collection account is flagged, never credited', async () => {
    const merchant = await testAccount(runtime);
    const { paymentId, attemptId, confirmed } = await inFlight(merchant.accountId);
    // The attempt's money went to a credential the merchant connected itself (before collection
    // became the operator's): the merchant has the naira already; crediting it would pay it twice.
    await runtime.db
      .updateTable('collection_accounts')
      .set({ owner: 'merchant' })
      .where('id', '=', COLLECTION.paystack)
      .execute();
    try {
      const out = await record(merchant.accountId, {
        payment_id: paymentId,
        attempt_id: attemptId,
        rail: 'paystack',
        outcome: 'succeeded',
        confirmed,
      });
      expect(out.result).toBe('flagged');
    } finally {
      await runtime.db
        .updateTable('collection_accounts')
        .set({ owner: 'operator' })
        .where('id', '=', COLLECTION.paystack)
        .execute();
    }
    expect(await statusOf(paymentId)).toBe('pending');
    expect(await attempt(attemptId)).toMatchObject({
      outcome: 'flagged',
      refund_status: 'due',
      failure_reason: expect.stringContaining('merchant-owned'),
    });
  });
});
