// Idle workers sleep instead of polling (issue 15, "small at rest"): they are woken by database
// notifications (LISTEN/NOTIFY; migrations 018 and 022). Each worker here polls only every 10
// minutes, and the work must be done within a 60 s ceiling: only a wake-up gets it done in time.
// Each test first waits for the worker's first pass to end, so the work it then writes is found by
// a pass that only a notification started.

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { claimDueDeliveries } from '../src/db/repositories/webhook-deliveries.ts';
import type { Runtime } from '../src/runtime.ts';
import { settlePaidPayments } from '../src/settlement/payment-settlement.ts';
import { startSettlementWorker } from '../src/settlement/worker.ts';
import { startDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import { bearer, type TestAccount, testAccount, testApp } from './support/harness.ts';
import { fund, post } from './support/money.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';
import { startReceiver, writeEvent } from './support/webhooks.ts';

// Counted, not changed: the tests wait for a worker's first pass to end before writing its work.
vi.mock('../src/settlement/payment-settlement.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/settlement/payment-settlement.ts')>();
  return { ...original, settlePaidPayments: vi.fn(original.settlePaidPayments) };
});
vi.mock('../src/db/repositories/webhook-deliveries.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/db/repositories/webhook-deliveries.ts')>();
  return { ...original, claimDueDeliveries: vi.fn(original.claimDueDeliveries) };
});

const SAFETY_POLL_MS = 10 * 60_000;
const CEILING_MS = 60_000;

let chain: ChainConnection;
let runtime: Runtime;
let app: FastifyInstance;
let merchant: TestAccount;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain, { WEBHOOK_ALLOW_PRIVATE: '1' });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
});

afterAll(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  await chain?.close();
});

/** Resolves once `fn` has been called and every call so far has settled. */
async function firstPassDone(fn: { mock: { settledResults: unknown[]; calls: unknown[] } }): Promise<void> {
  await waitUntil(
    "the worker's first pass",
    async () => fn.mock.calls.length > 0 && fn.mock.settledResults.length === fn.mock.calls.length,
    CEILING_MS,
  );
}

async function status(url: string): Promise<string> {
  const res = await app.inject({ method: 'GET', url, headers: bearer(merchant.apiKey) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().status;
}

describe('an idle settlement worker', () => {
  it('is woken by payment.paid and by a queued payout, and settles both on chain', async () => {
    const intake = vi.mocked(settlePaidPayments);
    intake.mockClear();
    const worker = startSettlementWorker(runtime, { idlePollMs: SAFETY_POLL_MS });
    stops.push(() => worker.stop());
    await firstPassDone(intake);

    const [address, payoutTo] = payoutAddresses(2);
    const payment = await createPayment(app, merchant.apiKey, { amount: 25_000, payout_address: address });
    expect((await payPayment(app, merchant.apiKey, payment.id)).statusCode).toBe(200);
    await waitUntil(
      'the paid payment to settle',
      async () => (await status(`/v1/payments/${payment.id}`)) === 'settled',
      CEILING_MS,
    );

    // A payout writes no payment.paid: the transfer it queues wakes the worker (migration 022).
    await fund(app, merchant.apiKey, 10);
    const payout = await post(app, merchant.apiKey, '/v1/payouts', { amount: 1, to_address: payoutTo });
    expect(payout.statusCode, payout.body).toBe(200);
    await waitUntil(
      'the payout to settle',
      async () => (await status(`/v1/payouts/${payout.json().id}`)) === 'settled',
      CEILING_MS,
    );
  });
});

describe('an idle webhook delivery worker', () => {
  it('is woken by a new event and by a redelivery, and delivers both', async () => {
    const claims = vi.mocked(claimDueDeliveries);
    claims.mockClear();
    const receiver = await startReceiver();
    const stop = startDeliveryWorker(runtime, { pollIntervalMs: SAFETY_POLL_MS, accountIds: [merchant.accountId] });
    stops.push(stop);
    await firstPassDone(claims);

    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: receiver.url });
    const [first] = await receiver.waitFor(1, CEILING_MS);
    expect(first!.headers['webhook-id']).toBe(event.id);

    // A redelivery sets a delivered row pending again, without a new event (migration 022).
    await waitUntil(
      'the first delivery to be recorded',
      async () =>
        (
          await runtime.db
            .selectFrom('event_deliveries')
            .select('status')
            .where('event_id', '=', event.id)
            .executeTakeFirstOrThrow()
        ).status === 'delivered',
      CEILING_MS,
    );
    await firstPassDone(claims);
    const redeliver = await post(app, merchant.apiKey, `/v1/events/${event.id}/redeliver`, {});
    expect(redeliver.statusCode, redeliver.body).toBe(200);
    const [, second] = await receiver.waitFor(2, CEILING_MS);
    expect(second!.headers['webhook-id']).toBe(event.id);
  });
});
