// start_payment_attempt: a payer starts paying on a provider rail. The attempt is recorded pending
// and the payment moves pending → processing, so one payment has at most one attempt in flight;
// a lapsed session, another merchant's payment or a non-system caller starts nothing.

import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { findPaymentById } from '../../src/db/repositories/payments.ts';
import { paystackReference } from '../../src/domain/provider-references.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { testAccount, testRuntime, type TestRuntime } from '../../test/support/harness.ts';
import { retireCollection } from '../../src/payments/rails/collections.ts';
import { MPESA_APP, operatorCollects, PAYSTACK_LIVE_KEY, PAYSTACK_TEST_KEY } from '../../test/support/rails.ts';
import { expectRefusedOffSystem, pendingPayment, testMode } from '../../test/support/system-tools.ts';
import { startPaymentAttempt } from './start-payment-attempt.ts';

let runtime: TestRuntime;
/** The operator's instance-wide test-mode collection accounts. */
const COLLECTION = { paystack: '', mpesa: '' };
beforeAll(async () => {
  runtime = await testRuntime({}, { clock: new ManualClock(new Date('2026-05-01T09:00:00.000Z')) });
  COLLECTION.paystack = (await operatorCollects(runtime, 'paystack', { secret_key: PAYSTACK_TEST_KEY })).id;
  COLLECTION.mpesa = (await operatorCollects(runtime, 'mpesa', MPESA_APP)).id;
});

async function attemptsOf(paymentId: string) {
  return runtime.db.selectFrom('payment_attempts').selectAll().where('payment_id', '=', paymentId).execute();
}

describe('start_payment_attempt', () => {
  it('is refused on every channel but system, and the payment stays pending', async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    await expectRefusedOffSystem(
      runtime,
      startPaymentAttempt,
      { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
      testMode(merchant.accountId),
    );
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('pending');
    expect(await attemptsOf(paymentId)).toEqual([]);
  });

  it('records a pending Paystack attempt for the whole amount and marks the payment processing', async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    const payment = await findPaymentById(runtime.db, paymentId);
    const output = await runSystemTool(
      runtime,
      startPaymentAttempt,
      { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack, payer_hint: 'a***@example.com' },
      testMode(merchant.accountId),
    );
    expect(output).toMatchObject({
      payment_id: paymentId,
      amount_minor: payment!.amount_minor.toString(),
      currency: 'NGN',
    });
    const [attempt, ...more] = await attemptsOf(paymentId);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({
      id: output.attempt_id,
      rail: 'paystack',
      collection_id: COLLECTION.paystack,
      outcome: 'pending',
      amount_minor: payment!.amount_minor,
      currency: 'NGN',
      payer_hint: 'a***@example.com',
      // Paystack takes the reference from us, so it is known before the provider is called.
      provider_reference: paystackReference(output.attempt_id),
    });
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('processing');
    // A system step is still the merchant's record: one action, on the system channel.
    const actions = await runtime.db
      .selectFrom('agent_actions')
      .select(['channel', 'status', 'key_id'])
      .where('account_id', '=', merchant.accountId)
      .where('tool', '=', 'start_payment_attempt')
      .execute();
    expect(actions).toEqual([{ channel: 'system', status: 'executed', key_id: null }]);
  });

  it('an M-Pesa attempt keeps the callback secret hash and waits for its CheckoutRequestID', async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    const hash = 'a'.repeat(64);
    await runSystemTool(
      runtime,
      startPaymentAttempt,
      { payment_id: paymentId, rail: 'mpesa', collection_id: COLLECTION.mpesa, callback_token_sha256: hash },
      testMode(merchant.accountId),
    );
    const [attempt] = await attemptsOf(paymentId);
    expect(attempt).toMatchObject({
      rail: 'mpesa',
      collection_id: COLLECTION.mpesa,
      callback_token_hash: hash,
      provider_reference: null,
    });
  });

  it('a second attempt while one is in flight is refused: one attempt, the payer is never charged twice', async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    await runSystemTool(
      runtime,
      startPaymentAttempt,
      { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
      testMode(merchant.accountId),
    );
    await expect(
      runSystemTool(
        runtime,
        startPaymentAttempt,
        { payment_id: paymentId, rail: 'mpesa', collection_id: COLLECTION.mpesa },
        testMode(merchant.accountId),
      ),
    ).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/in progress/) });
    expect(await attemptsOf(paymentId)).toHaveLength(1);
  });

  it('a lapsed session is refused as expired, even before the expiry job has run', async () => {
    const merchant = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId, 1);
    runtime.clock.advance(61_000);
    await expect(
      runSystemTool(
        runtime,
        startPaymentAttempt,
        { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
        testMode(merchant.accountId),
      ),
    ).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/expired/) });
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('pending');
    expect(await attemptsOf(paymentId)).toEqual([]);
  });

  it("another merchant's payment, or the same one in live mode, is not found", async () => {
    const owner = await testAccount(runtime);
    const other = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, owner.accountId);
    await expect(
      runSystemTool(
        runtime,
        startPaymentAttempt,
        { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
        testMode(other.accountId),
      ),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      runSystemTool(
        runtime,
        startPaymentAttempt,
        { payment_id: paymentId, rail: 'paystack', collection_id: COLLECTION.paystack },
        { accountId: owner.accountId, livemode: true },
      ),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('pending');
    expect(await attemptsOf(paymentId)).toEqual([]);
  });

  it("pays only into an operator's active collection account for this account and mode", async () => {
    const merchant = await testAccount(runtime);
    const other = await testAccount(runtime);
    const paymentId = await pendingPayment(runtime, merchant.accountId);
    const now = runtime.clock.now();
    // A merchant's own credential from before collection became the operator's (as migration 023
    // leaves it), another account's own collection account, a live one, a retired one, another rail's.
    const merchantOwned = 'col_' + 'm'.repeat(22);
    await runtime.db
      .insertInto('collection_accounts')
      .values({
        id: merchantOwned,
        rail: 'paystack',
        livemode: false,
        account_id: merchant.accountId,
        owner: 'merchant',
        settings: '{}',
        secret_ciphertext: 'sealed',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const othersOwn = await operatorCollects(
      runtime,
      'paystack',
      { secret_key: PAYSTACK_TEST_KEY },
      { accountId: other.accountId },
    );
    const live = await operatorCollects(runtime, 'paystack', { secret_key: PAYSTACK_LIVE_KEY }, { livemode: true });
    const retired = await operatorCollects(
      runtime,
      'paystack',
      { secret_key: PAYSTACK_TEST_KEY },
      { accountId: merchant.accountId },
    );
    await retireCollection(runtime.db, { rail: 'paystack', livemode: false, accountId: merchant.accountId }, now);
    for (const [collection_id, rail] of [
      [merchantOwned, 'paystack'],
      [othersOwn.id, 'paystack'],
      [live.id, 'paystack'],
      [retired.id, 'paystack'],
      [COLLECTION.paystack, 'mpesa'],
      ['col_nonexistent000000000000', 'paystack'],
    ] as const) {
      await expect(
        runSystemTool(
          runtime,
          startPaymentAttempt,
          { payment_id: paymentId, rail, collection_id },
          testMode(merchant.accountId),
        ),
        collection_id,
      ).rejects.toMatchObject({ code: 'invalid_request', param: 'collection_id' });
    }
    expect((await findPaymentById(runtime.db, paymentId))?.status).toBe('pending');
    expect(await attemptsOf(paymentId)).toEqual([]);
  });
});
