// Chaos: the relayer's stored next nonce is ahead of the chain's (issue 17, rows 3 and 4: after a
// reorg it was 11 against the chain's 10, and every later batch stayed `signed` for ever). Here the
// missing nonces belong to no batch of ours (handed out, then lost: what a node that lost its pool,
// or another tool using the key, leaves). The worker must refill them with zero-value transfers to
// the relayer, never skip them, so that the batch signed after the gap lands, and pay no one twice.

import { describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { testAccount } from '../support/harness.ts';
import { payoutAddresses } from '../support/settlement.ts';
import { createPaidPayments } from '../support/settlement-fixtures.ts';
import {
  chaosRuntime,
  chaosWorker,
  connectNode,
  devnetNode,
  expectPaidExactlyOnce,
  metricValue,
  waitFor,
} from './support/chain.ts';

describe('chaos: a nonce gap', () => {
  it('is refilled with zero-value transfers to the relayer, and the batch behind it lands once', async () => {
    const node = await devnetNode();
    const chain = await connectNode(node.url, node, { confirmations: 1 });
    const { runtime } = await chaosRuntime(chain);
    const merchant = await testAccount(runtime);
    // No wait before refilling a nonce this relayer never handed out: the gap is the test's own.
    chaosWorker(runtime, { foreignNonceGapAfterMs: 0 });
    const status = async (id: string) =>
      (await runtime.db.selectFrom('payments').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    const relayer = chain.relayer.address as Address;
    const [first, second] = payoutAddresses(2);

    const [before] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 1000, currency: 'NGN', payoutAddress: first! },
    ]);
    await waitFor('the first payment settled', async () => (await status(before!.id)) === 'settled');
    const chainNonce = await chain.publicClient.getTransactionCount({ address: relayer, blockTag: 'pending' });
    const refillsBefore = await metricValue(runtime, 'plainpay_settlement_nonce_repairs_total', { action: 'refill' });

    // Two nonces handed out and lost: the stored next nonce is two ahead of the chain.
    await runtime.db
      .updateTable('relayer_leases')
      .set((eb) => ({ next_nonce: eb('next_nonce', '+', 2n) }))
      .execute();
    const [after] = await createPaidPayments(runtime, merchant.accountId, [
      { amount: 2000, currency: 'NGN', payoutAddress: second! },
    ]);
    await waitFor('the payment signed behind the gap settled', async () => (await status(after!.id)) === 'settled');

    // The two missing nonces were filled by transfers from the relayer to itself, worth nothing.
    const fills = await runtime.db
      .selectFrom('relayer_nonce_fills')
      .select(['nonce', 'hash'])
      .orderBy('nonce')
      .execute();
    expect(fills.map((f) => Number(f.nonce))).toEqual([chainNonce, chainNonce + 1]);
    for (const fill of fills) {
      const tx = await chain.publicClient.getTransaction({ hash: fill.hash as `0x${string}` });
      expect({ from: tx.from.toLowerCase(), to: tx.to?.toLowerCase(), value: tx.value }).toEqual({
        from: relayer.toLowerCase(),
        to: relayer.toLowerCase(),
        value: 0n,
      });
    }
    expect(
      (await metricValue(runtime, 'plainpay_settlement_nonce_repairs_total', { action: 'refill' })) - refillsBefore,
    ).toBe(2);
    // Nothing skipped: the chain's nonce is the stored next nonce again.
    const stored = await runtime.db.selectFrom('relayer_leases').select('next_nonce').executeTakeFirstOrThrow();
    expect(BigInt(await chain.publicClient.getTransactionCount({ address: relayer, blockTag: 'pending' }))).toBe(
      stored.next_nonce,
    );

    const settled = await runtime.db
      .selectFrom('payments')
      .select(['id', 'settlement_minor'])
      .where('id', 'in', [before!.id, after!.id])
      .execute();
    const minor = new Map(settled.map((p) => [p.id, p.settlement_minor]));
    await expectPaidExactlyOnce(
      runtime,
      chain,
      new Map([
        [first!.toLowerCase(), minor.get(before!.id)!],
        [second!.toLowerCase(), minor.get(after!.id)!],
      ]),
    );
  });
});
