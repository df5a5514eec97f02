// Set-up shared by the tests beside the system tools (tools/system/): the refusal every system tool
// promises off the `system` channel, and the payments and refunds several of them start from.

import { expect } from 'vitest';
import type { AnyTool } from '../../src/core/tool.ts';
import type { ModeScope } from '../../src/db/database.ts';
import type { ProviderRail } from '../../src/db/tables/rails.ts';
import { API_KEY_SCOPES } from '../../src/domain/api-key-secret.ts';
import { collectionFor, parseRailCredentials, setOperatorCollection } from '../../src/payments/rails/collections.ts';
import { paystackReference } from '../../src/domain/provider-references.ts';
import { executedOutput, executeTool } from '../../src/pipeline/execute-tool.ts';
import { runSystemTool, systemActor } from '../../src/pipeline/system-runs.ts';
import type { Runtime } from '../../src/runtime.ts';
import { settlePaidPayments } from '../../src/settlement/payment-settlement.ts';
import { createPayment } from '../../tools/create-payment.ts';
import { refundPayment } from '../../tools/refund-payment.ts';
import { recordPaymentAttempt } from '../../tools/system/record-payment-attempt.ts';
import { startPaymentAttempt } from '../../tools/system/start-payment-attempt.ts';
import { MPESA_APP, PAYSTACK_LIVE_KEY, PAYSTACK_TEST_KEY } from '../fakes/credentials.ts';
import { firstKeyAuth } from './money.ts';

/** The account's test mode: the scope a system tool acts in for these tests. */
export const testMode = (accountId: string): ModeScope => ({ accountId, livemode: false });

/**
 * The tool is refused with permission_denied on the api, agent and mcp channels. Each actor holds
 * every scope of a key, so the channel is the only reason left to refuse.
 */
export async function expectRefusedOffSystem(
  runtime: Runtime,
  tool: AnyTool,
  input: unknown,
  scope: ModeScope,
): Promise<void> {
  for (const channel of ['api', 'agent', 'mcp'] as const) {
    const actor = { ...systemActor(scope), channel, scopes: new Set(API_KEY_SCOPES) };
    await expect(executeTool(tool, input, { runtime, actor })).rejects.toMatchObject({ code: 'permission_denied' });
  }
}

/** The types of the events about the object, oldest first. */
export async function eventTypes(runtime: Runtime, objectId: string): Promise<string[]> {
  const rows = await runtime.db
    .selectFrom('events')
    .select('type')
    .where('object_id', '=', objectId)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => r.type);
}

/** A pending checkout session of the account in test mode, lapsing ttlMinutes from now. */
export async function pendingPayment(runtime: Runtime, accountId: string, ttlMinutes = 30): Promise<string> {
  const created = executedOutput(
    await executeTool(
      createPayment,
      { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/thanks', ttl_minutes: ttlMinutes },
      { runtime, actor: systemActor(testMode(accountId)) },
    ),
  );
  return created.id;
}

/**
 * The operator's instance-wide collection account of a rail and mode, set with the fakes' credentials
 * the first time one is needed (docs/rails.md, "Who collects").
 */
export async function operatorCollection(runtime: Runtime, rail: ProviderRail, livemode: boolean): Promise<string> {
  const scope = { accountId: 'acct_none', livemode };
  const existing = await collectionFor(runtime.db, runtime.secretBox, scope, rail);
  if (existing && existing.account.accountId === null) return existing.account.id;
  const credentials =
    rail === 'paystack'
      ? { secret_key: livemode ? PAYSTACK_LIVE_KEY : PAYSTACK_TEST_KEY }
      : { ...MPESA_APP, environment: livemode ? 'production' : 'sandbox' };
  const set = await setOperatorCollection(
    runtime.db,
    runtime.secretBox,
    { rail, livemode, accountId: null },
    parseRailCredentials(rail, livemode, credentials),
    runtime.clock.now(),
  );
  return set.id;
}

/**
 * A merchant's refund that Paystack still has to pay: a payment paid through a Paystack attempt,
 * settled into the balance, then refunded by the merchant's key (a Paystack payment's refund is
 * pending until Paystack has paid it).
 */
export async function pendingPaystackRefund(
  runtime: Runtime,
  accountId: string,
): Promise<{ refundId: string; paymentId: string }> {
  const scope = testMode(accountId);
  const payment = executedOutput(
    await executeTool(
      createPayment,
      { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/thanks' },
      { runtime, actor: systemActor(scope) },
    ),
  );
  const started = await runSystemTool(
    runtime,
    startPaymentAttempt,
    { payment_id: payment.id, rail: 'paystack', collection_id: await operatorCollection(runtime, 'paystack', false) },
    scope,
  );
  await runSystemTool(
    runtime,
    recordPaymentAttempt,
    {
      payment_id: payment.id,
      attempt_id: started.attempt_id,
      rail: 'paystack',
      outcome: 'succeeded',
      confirmed: {
        amount_minor: started.amount_minor,
        currency: started.currency,
        reference: paystackReference(started.attempt_id),
      },
    },
    scope,
  );
  while ((await settlePaidPayments(runtime, { chunk: 50, testModeOnChain: async () => false })) > 0);
  const actor = { ...(await firstKeyAuth(runtime, accountId)), channel: 'api' as const };
  const refund = executedOutput(
    await executeTool(refundPayment, { payment_id: payment.id, reason: 'returned' }, { runtime, actor }),
  );
  expect(refund.status).toBe('pending');
  return { refundId: refund.id, paymentId: payment.id };
}
