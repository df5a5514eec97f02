// Settlement schedules (docs/settlement.md, "Schedules"), in-process on the embedded devnet with the
// runtime's ManualClock driving the windows: the account setting (GET/PUT /v1/settlement_schedule),
// a payment's own schedule, reads and payment.paid showing when it will settle, an hourly window
// held across a worker restart and settled at its boundary in one line per address, a threshold
// reached by a second payment, and the ledger/chain invariants after each.

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain, readTokenBalance } from '../src/chain/chain.ts';
import type { ManualClock } from '../src/core/clock.ts';
import { listEventsForObject } from '../src/db/repositories/events.ts';
import type { Runtime } from '../src/runtime.ts';
import { windowEnd } from '../src/domain/settlement-windows.ts';
import { type SettlementWorker, startSettlementWorker } from '../src/settlement/worker.ts';
import { bearer, testAccount, testApp } from './support/harness.ts';
import { createPayment, payPayment } from './support/payments.ts';
import { expectSettlementInvariants, payoutAddresses, settlementRuntime, waitUntil } from './support/settlement.ts';

let chain: ChainConnection;
let runtime: Runtime & { clock: ManualClock };
let app: FastifyInstance;
const workers: SettlementWorker[] = [];

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  runtime = await settlementRuntime(chain);
  app = await testApp(runtime);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await chain?.close();
});

function worker(): SettlementWorker {
  // A short idle sleep: the test moves the clock past a window and the worker must notice soon.
  const w = startSettlementWorker(runtime, { pollIntervalMs: 20, idlePollMs: 50 });
  workers.push(w);
  return w;
}

async function stop(w: SettlementWorker): Promise<void> {
  workers.splice(workers.indexOf(w), 1);
  await w.stop();
}

async function putSchedule(key: string, body: unknown) {
  return app.inject({
    method: 'PUT',
    url: '/v1/settlement_schedule',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

async function paymentView(key: string, id: string) {
  const res = await app.inject({ method: 'GET', url: `/v1/payments/${id}`, headers: bearer(key) });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function paidPayment(key: string, body: Record<string, unknown>) {
  const created = await createPayment(app, key, body);
  expect((await payPayment(app, key, created.id)).statusCode).toBe(200);
  return created.id as string;
}

async function statuses(ids: readonly string[]): Promise<string[]> {
  const rows = await runtime.db.selectFrom('payments').select(['id', 'status']).where('id', 'in', ids).execute();
  return ids.map((id) => rows.find((r) => r.id === id)!.status);
}

const allIn = (ids: readonly string[], status: string) => async () => (await statuses(ids)).every((s) => s === status);

async function transfersOf(ids: readonly string[]) {
  return runtime.db.selectFrom('transfers').selectAll().where('source_id', 'in', ids).orderBy('source_id').execute();
}

describe('the account setting: GET/PUT /v1/settlement_schedule', () => {
  it('is instant by default, per mode, validated, and what new payments take', async () => {
    const merchant = await testAccount(runtime);
    const read = await app.inject({ method: 'GET', url: '/v1/settlement_schedule', headers: bearer(merchant.apiKey) });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({
      object: 'settlement_schedule',
      livemode: false,
      schedule: 'instant',
      threshold: null,
      updated_at: null,
    });

    const missing = await putSchedule(merchant.apiKey, { schedule: 'threshold' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.param).toBe('threshold');
    const stray = await putSchedule(merchant.apiKey, { schedule: 'hourly', threshold: '10' });
    expect(stray.statusCode).toBe(400);
    expect(stray.json().error.param).toBe('threshold');
    const unknown = await putSchedule(merchant.apiKey, { schedule: 'weekly' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.param).toBe('schedule');

    // The threshold is an amount, so a JSON number in major units, as every amount the API writes.
    const set = await putSchedule(merchant.apiKey, { schedule: 'threshold', threshold: 250.5 });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ schedule: 'threshold', threshold: 250.5, livemode: false });
    const again = await app.inject({ method: 'GET', url: '/v1/settlement_schedule', headers: bearer(merchant.apiKey) });
    expect(again.json()).toMatchObject({ schedule: 'threshold', threshold: 250.5 });
    // The decimal string it used to take still works for one more release (docs/api.md).
    const legacy = await putSchedule(merchant.apiKey, { schedule: 'threshold', threshold: '250.50' });
    expect(legacy.json()).toMatchObject({ schedule: 'threshold', threshold: 250.5 });

    // The live mode of the same account is untouched.
    const live = await testAccount(runtime, { livemode: true });
    const liveRead = await app.inject({ method: 'GET', url: '/v1/settlement_schedule', headers: bearer(live.apiKey) });
    expect(liveRead.json()).toMatchObject({ schedule: 'instant', livemode: true });

    // New payments take the account's schedule unless they name their own.
    const byAccount = await createPayment(app, merchant.apiKey);
    expect(byAccount.settlement_schedule).toBe('threshold');
    expect(byAccount.settlement_due_at).toBeNull();
    const own = await createPayment(app, merchant.apiKey, { settlement_schedule: 'daily' });
    expect(own.settlement_schedule).toBe('daily');
    const refused = await app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { ...bearer(merchant.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        amount: 5000,
        currency: 'NGN',
        redirect_url: 'https://shop.example/thanks',
        settlement_schedule: 'threshold',
      }),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.param).toBe('settlement_schedule');
  });
});

describe('scheduled settlement on the embedded devnet', () => {
  it('hourly: held until the window ends, across a worker restart; then one line per address', async () => {
    const merchant = await testAccount(runtime);
    expect((await putSchedule(merchant.apiKey, { schedule: 'hourly' })).statusCode).toBe(200);
    const [a, b, c] = payoutAddresses(3);
    const held = [
      await paidPayment(merchant.apiKey, { payout_address: a }),
      await paidPayment(merchant.apiKey, { payout_address: b }),
      await paidPayment(merchant.apiKey, { payout_address: a }),
    ];
    const first = await paymentView(merchant.apiKey, held[0]!);
    const due = windowEnd('hourly', new Date(first.paid_at), runtime.config.settlement.hourMs)!;
    expect(due.getTime() % 3_600_000).toBe(0);
    expect(first.settlement_schedule).toBe('hourly');
    // Read before the worker took it: the end of its window, computed from when it was paid.
    expect(first.settlement_due_at).toBe(due.toISOString());
    const [paidEvent] = (await listEventsForObject(runtime.db, held[0]!)).filter((e) => e.type === 'payment.paid');
    expect((paidEvent!.data as { object: { settlement_due_at: string } }).object.settlement_due_at).toBe(
      due.toISOString(),
    );

    const w1 = worker();
    await waitUntil('the hourly payments taken into settlement', allIn(held, 'settling'));
    // An instant payment to another address goes out meanwhile: the planner ran with the held ones
    // queued and left them there.
    const instant = await paidPayment(merchant.apiKey, { payout_address: c, settlement_schedule: 'instant' });
    await waitUntil('the instant payment settled', allIn([instant], 'settled'));
    expect(await statuses(held)).toEqual(['settling', 'settling', 'settling']);
    expect((await transfersOf(held)).map((t) => t.status)).toEqual(['queued', 'queued', 'queued']);
    for (const id of held) expect((await paymentView(merchant.apiKey, id)).settlement_due_at).toBe(due.toISOString());

    // A restart inside the window loses nothing and sends nothing early.
    await stop(w1);
    worker();
    runtime.clock.advance(due.getTime() - runtime.clock.now().getTime() + 1);
    await waitUntil('the hourly payments settled after the window', allIn(held, 'settled'));

    const transfers = await transfersOf(held);
    const batchIds = new Set(transfers.map((t) => t.batch_id));
    expect(batchIds.size).toBe(1);
    const batch = await runtime.db
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', [...batchIds][0]!)
      .executeTakeFirstOrThrow();
    // Everything owed to one address in the window: one line (two payments to a, one to b).
    expect(batch.transfer_count).toBe(3);
    expect((batch.lines as unknown[]).length).toBe(2);
    const rows = await runtime.db.selectFrom('payments').selectAll().where('id', 'in', held).execute();
    const toA = rows.filter((r) => r.payout_address === a).reduce((s, r) => s + r.settlement_minor, 0n);
    expect(await readTokenBalance(chain, a!)).toBe(toA);
    for (const id of held) {
      const settled = (await listEventsForObject(runtime.db, id)).filter((e) => e.type === 'payment.settled');
      expect(settled).toHaveLength(1);
    }
    await expectSettlementInvariants(runtime, chain);
  });

  it('threshold: the first payment waits; the one that takes the address over the threshold sends both', async () => {
    const merchant = await testAccount(runtime);
    // 5000 NGN settles about 3.19 USDC: one payment stays under 5 USDC, two go over.
    expect((await putSchedule(merchant.apiKey, { schedule: 'threshold', threshold: '5' })).statusCode).toBe(200);
    const [a, other] = payoutAddresses(2);
    worker();
    const waiting = await paidPayment(merchant.apiKey, { payout_address: a });
    await waitUntil('the first payment taken into settlement', allIn([waiting], 'settling'));
    const view = await paymentView(merchant.apiKey, waiting);
    // At the latest at the next UTC midnight after it was paid.
    expect(view.settlement_due_at).toBe(
      windowEnd('threshold', new Date(view.paid_at), runtime.config.settlement.hourMs)!.toISOString(),
    );
    const instant = await paidPayment(merchant.apiKey, { payout_address: other, settlement_schedule: 'instant' });
    await waitUntil('an instant payment settled meanwhile', allIn([instant], 'settled'));
    expect(await statuses([waiting])).toEqual(['settling']);

    const second = await paidPayment(merchant.apiKey, { payout_address: a });
    await waitUntil('both settled once the threshold was reached', allIn([waiting, second], 'settled'));
    const transfers = await transfersOf([waiting, second]);
    expect(new Set(transfers.map((t) => t.batch_id)).size).toBe(1);
    const rows = await runtime.db.selectFrom('payments').selectAll().where('id', 'in', [waiting, second]).execute();
    expect(await readTokenBalance(chain, a!)).toBe(rows.reduce((s, r) => s + r.settlement_minor, 0n));
    await expectSettlementInvariants(runtime, chain);
  });
});

describe('window boundaries', () => {
  it('hourly ends at the next UTC hour, daily and the threshold cap at the next UTC midnight', () => {
    const hour = 3_600_000;
    const at = new Date('2026-11-24T07:59:59.999Z');
    expect(windowEnd('instant', at, hour)).toBeNull();
    expect(windowEnd('hourly', at, hour)!.toISOString()).toBe('2026-11-24T08:00:00.000Z');
    expect(windowEnd('hourly', new Date('2026-11-24T08:00:00.000Z'), hour)!.toISOString()).toBe(
      '2026-11-24T09:00:00.000Z',
    );
    expect(windowEnd('daily', at, hour)!.toISOString()).toBe('2026-11-25T00:00:00.000Z');
    expect(windowEnd('threshold', at, hour)!.toISOString()).toBe('2026-11-25T00:00:00.000Z');
  });
});
