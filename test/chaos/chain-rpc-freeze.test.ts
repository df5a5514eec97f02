// Chaos: the RPC endpoint stops answering for a while (connections accepted, no answer) while a
// settlement batch is in flight. The worker's calls must fail within their timeout rather than hang
// it; the batch unconfirmed past the threshold must raise the stuck alarm (error log and metric)
// during the freeze, from the database alone; after the freeze everything settles, once.

import { describe, expect, it } from 'vitest';
import { testAccount } from '../support/harness.ts';
import { payoutAddresses } from '../support/settlement.ts';
import { createPaidPayments } from '../support/settlement-fixtures.ts';
import {
  chaosRuntime,
  chaosWorker,
  connectNode,
  devnetNode,
  expectPaidExactlyOnce,
  freezableProxy,
  metricValue,
  waitFor,
} from './support/chain.ts';

describe('chaos: RPC freeze', () => {
  it('a frozen node fails calls instead of hanging the worker, raises the stuck alarm, and nothing is paid twice', async () => {
    const node = await devnetNode();
    const endpoint = await freezableProxy(node.url);
    const chain = await connectNode(endpoint.url, node, { confirmations: 1, rpcTimeoutMs: 500 });
    const { runtime, logs } = await chaosRuntime(chain);
    const merchant = await testAccount(runtime);
    chaosWorker(runtime, { stuckAfterMs: 1_000, stuckCheckIntervalMs: 100 });
    const status = async (id: string) =>
      (await runtime.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

    const [a, b] = payoutAddresses(2);
    const [before] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 1000, currency: 'NGN', payoutAddress: a! },
    ]);
    await waitFor('a payment settled through the endpoint', async () => (await status(before!.id)) === 'settled');

    // A batch in flight (the node holds it unmined), then the endpoint freezes.
    await node.setAutomine(false);
    const [during] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 2000, currency: 'NGN', payoutAddress: b! },
    ]);
    await waitFor('a broadcast transaction', async () => {
      const row = await runtime.db
        .selectFrom('chain_transactions')
        .select('hash')
        .where('status', '=', 'broadcast')
        .executeTakeFirst();
      return row !== undefined;
    });
    endpoint.freeze();
    const frozenAt = logs.length;

    await waitFor(
      'the stuck alarm',
      async () => (await metricValue(runtime, 'plainpay_settlement_batches_stuck')) >= 1,
    );
    await waitFor('the stuck batch logged at error level', async () =>
      logs.some((l) => l.level >= 50 && l.msg.startsWith('settlement batches unconfirmed past the stuck threshold')),
    );
    // The loop is not hung on a call that never answers: turns fail (bounded) and are retried.
    await waitFor('a failed turn during the freeze', async () =>
      logs
        .slice(frozenAt)
        .some((l) => l.msg === 'settlement job failed; retrying' || l.msg.startsWith('settlement job paused:')),
    );

    // The transaction is mined while the endpoint is frozen (the node itself is fine), then it thaws.
    await node.mine(1);
    await node.setAutomine(true);
    endpoint.thaw();
    await waitFor('settled after the freeze', async () => (await status(during!.id)) === 'settled');
    await waitFor(
      'the stuck alarm cleared',
      async () => (await metricValue(runtime, 'plainpay_settlement_batches_stuck')) === 0,
    );

    const settled = await runtime.db
      .selectFrom('payments')
      .select(['id', 'settlement_minor'])
      .where('id', 'in', [before!.id, during!.id])
      .execute();
    const minor = new Map(settled.map((p) => [p.id, p.settlement_minor]));
    await expectPaidExactlyOnce(
      runtime,
      chain,
      new Map([
        [a!.toLowerCase(), minor.get(before!.id)!],
        [b!.toLowerCase(), minor.get(during!.id)!],
      ]),
    );
    const settledEvents = await runtime.db
      .selectFrom('events')
      .select('object_id')
      .where('type', '=', 'payment.settled')
      .where('object_id', 'in', [before!.id, during!.id])
      .execute();
    expect(settledEvents).toHaveLength(2);
  });
});
