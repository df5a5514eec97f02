// Chaos: a reorg takes a confirmed settlement off the chain (issue 17, row 3). On an out-of-process
// devnet with CONFIRMATIONS=1: evm_snapshot before the settlement transaction is mined, evm_revert
// once it is confirmed, then empty blocks so the new chain is longer. The payment must go back to
// settling with payment.settlement_reverted, the same signed transaction must be broadcast again
// and land, the recipient must hold the amount exactly once, the ledger must balance against the
// chain, and later batches must not be stuck behind the freed nonce. When a fee-bumped sibling is
// mined in another block instead, the settlement is re-confirmed with the sibling's facts.

import { describe, expect, it } from 'vitest';
import { type Hex, parseTransaction } from 'viem';
import { type ChainConnection, signBatchTransaction } from '../../src/chain/chain.ts';
import { loadSettlementHashes } from '../../src/audit/settlement-hashes.ts';
import type { DevnetRpcServer } from '../../src/chain/devnet.ts';
import type { PaymentRow } from '../../src/db/database.ts';
import type { Runtime } from '../../src/runtime.ts';
import { testAccount, testApp } from '../support/harness.ts';
import { fund, post } from '../support/money.ts';
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

interface Setup {
  node: DevnetRpcServer;
  chain: ChainConnection;
  runtime: Runtime;
  accountId: string;
  apiKey: string;
}

// One node and one worker for the file: the database remembers the chain it signs for, and a second
// node would be another chain (chain-node.test.ts is about that).
let shared: Promise<Setup> | undefined;
function setup(): Promise<Setup> {
  shared ??= start();
  return shared;
}

async function start(): Promise<Setup> {
  const node = await devnetNode();
  const chain = await connectNode(node.url, node, { confirmations: 1 });
  const { runtime } = await chaosRuntime(chain);
  const merchant = await testAccount(runtime);
  chaosWorker(runtime);
  return { node, chain, runtime, accountId: merchant.accountId, apiKey: merchant.apiKey };
}

async function payment(runtime: Runtime, id: string): Promise<PaymentRow> {
  return runtime.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function settle(s: Setup, address: string, amount: number): Promise<PaymentRow> {
  const [paid] = await createPaidPayments(s.runtime, s.accountId, [
    { amount, currency: 'NGN', payoutAddress: address },
  ]);
  await waitFor(`payment ${paid!.id} settled`, async () => (await payment(s.runtime, paid!.id)).status === 'settled');
  return payment(s.runtime, paid!.id);
}

async function eventsOf(runtime: Runtime, objectId: string): Promise<string[]> {
  const rows = await runtime.db
    .selectFrom('events')
    .select('type')
    .where('object_id', '=', objectId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.type);
}

/** Reverts the node to `snapshot` and mines `blocks` empty blocks: a longer chain without them. */
async function reorg(node: DevnetRpcServer, snapshot: unknown, blocks: number): Promise<void> {
  expect(await node.rpc('evm_revert', [snapshot])).toBe(true);
  await node.mine(blocks);
}

async function batchOf(runtime: Runtime, paymentId: string) {
  return runtime.db
    .selectFrom('transfers as t')
    .innerJoin('settlement_batches as b', 'b.id', 't.batch_id')
    .select(['b.id', 'b.reorg_count', 'b.tx_hash', 't.reversals'])
    .where('t.source_id', '=', paymentId)
    .executeTakeFirstOrThrow();
}

describe('chaos: reorgs', () => {
  it('depth 1: the payment goes back to settling, the same signed transaction lands again, paid once', async () => {
    const s = await setup();
    const [before, reorged, after] = payoutAddresses(3);
    const first = await settle(s, before!, 1200);
    const reorgsBefore = await metricValue(s.runtime, 'plainpay_settlement_reorgs_total');

    const snapshot = await s.node.rpc('evm_snapshot');
    const settled = await settle(s, reorged!, 5000);
    const txHash = settled.settlement_tx_hash!;
    const { id: batchId } = await batchOf(s.runtime, settled.id);
    await reorg(s.node, snapshot, 2);

    // Back in flight, announced, then confirmed again on the new chain.
    await waitFor('payment.settlement_reverted', async () =>
      (await eventsOf(s.runtime, settled.id)).includes('payment.settlement_reverted'),
    );
    await waitFor('settled again', async () => {
      const types = await eventsOf(s.runtime, settled.id);
      return (await payment(s.runtime, settled.id)).status === 'settled' && types.at(-1) === 'payment.settled';
    });
    expect(await eventsOf(s.runtime, settled.id)).toEqual([
      'payment.paid',
      'payment.settled',
      'payment.settlement_reverted',
      'payment.settled',
    ]);
    const again = await payment(s.runtime, settled.id);
    // The same bytes: the hash of the re-broadcast transaction is the one first signed.
    expect(again.settlement_tx_hash).toBe(txHash);
    const txs = await s.runtime.db
      .selectFrom('chain_transactions')
      .selectAll()
      .where('batch_id', '=', batchId)
      .execute();
    expect(txs.map((t) => t.hash)).toEqual([txHash]);
    expect(txs[0]!.broadcast_count).toBeGreaterThanOrEqual(2);
    expect(txs[0]!.status).toBe('mined');
    const receipt = await s.chain.publicClient.getTransactionReceipt({ hash: txHash as `0x${string}` });
    expect(txs[0]!.block_hash).toBe(receipt.blockHash);
    expect(await batchOf(s.runtime, settled.id)).toMatchObject({ reorg_count: 1, reversals: 1 });

    // The ledger was corrected by a reversing posting, then confirmed again: nothing deleted.
    const postings = await s.runtime.db
      .selectFrom('ledger_postings')
      .select(['kind', 'reference'])
      .where('reference', 'like', `${(await transferOf(s.runtime, settled.id)).id}%`)
      .orderBy('id')
      .execute();
    expect(postings.map((p) => p.kind)).toEqual([
      'transfer_enqueued',
      'transfer_confirmed',
      'transfer_confirmation_reversed',
      'transfer_confirmed',
    ]);
    expect(await metricValue(s.runtime, 'plainpay_settlement_reorgs_total')).toBe(reorgsBefore + 1);

    // Later batches are not stuck behind the nonce the reorg freed.
    const later = await settle(s, after!, 777);
    await expectPaidExactlyOnce(
      s.runtime,
      s.chain,
      new Map([
        [before!.toLowerCase(), first.settlement_minor],
        [reorged!.toLowerCase(), settled.settlement_minor],
        [after!.toLowerCase(), later.settlement_minor],
      ]),
    );
  });

  it('depth 2: two confirmed batches are reorganised away; both land again in nonce order, paid once', async () => {
    const s = await setup();
    const [a, b, c] = payoutAddresses(3);
    const snapshot = await s.node.rpc('evm_snapshot');
    const one = await settle(s, a!, 3000);
    const two = await settle(s, b!, 4000);
    const oneHash = one.settlement_tx_hash;
    const twoHash = two.settlement_tx_hash;
    await reorg(s.node, snapshot, 3);

    for (const p of [one, two]) {
      await waitFor(`${p.id} settled again`, async () => {
        const types = await eventsOf(s.runtime, p.id);
        return (
          types.includes('payment.settlement_reverted') &&
          types.at(-1) === 'payment.settled' &&
          (await payment(s.runtime, p.id)).status === 'settled'
        );
      });
    }
    expect((await payment(s.runtime, one.id)).settlement_tx_hash).toBe(oneHash);
    expect((await payment(s.runtime, two.id)).settlement_tx_hash).toBe(twoHash);
    const later = await settle(s, c!, 999);
    await expectPaidExactlyOnce(
      s.runtime,
      s.chain,
      new Map([
        [a!.toLowerCase(), one.settlement_minor],
        [b!.toLowerCase(), two.settlement_minor],
        [c!.toLowerCase(), later.settlement_minor],
      ]),
    );
  });

  it('a payout: back to queued with payout.settlement_reverted, the same transaction lands again, paid once', async () => {
    const s = await setup();
    const app = await testApp(s.runtime);
    const [to] = payoutAddresses(1);
    const payoutRow = (id: string) =>
      s.runtime.db.selectFrom('payouts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    await fund(app, s.apiKey, 100);
    const snapshot = await s.node.rpc('evm_snapshot');
    const created = await post(app, s.apiKey, '/v1/payouts', { amount: 40, to_address: to });
    expect(created.statusCode, created.body).toBe(200);
    const id: string = created.json().id;
    await waitFor('the payout settled', async () => (await payoutRow(id)).status === 'settled');
    const txHash = (await payoutRow(id)).tx_hash;
    await reorg(s.node, snapshot, 2);

    await waitFor('payout.settlement_reverted, then settled again', async () => {
      const types = await eventsOf(s.runtime, id);
      return (
        types.includes('payout.settlement_reverted') &&
        types.at(-1) === 'payout.settled' &&
        (await payoutRow(id)).status === 'settled'
      );
    });
    expect((await eventsOf(s.runtime, id)).filter((type) => type.startsWith('payout.'))).toEqual([
      'payout.settled',
      'payout.settlement_reverted',
      'payout.settled',
    ]);
    // The same signed bytes landed again; the recipient holds the 40 USDC once.
    expect((await payoutRow(id)).tx_hash).toBe(txHash);
    await expectPaidExactlyOnce(s.runtime, s.chain, new Map([[to!.toLowerCase(), 40_000_000n]]));
  });

  it("a fee-bumped sibling mined in another block: back in flight, then settled again with the sibling's hash", async () => {
    const s = await setup();
    const [addr] = payoutAddresses(1);
    const snapshot = await s.node.rpc('evm_snapshot');
    const settled = await settle(s, addr!, 2500);
    const first = settled.settlement_tx_hash as Hex;
    const { id: batchId } = await batchOf(s.runtime, settled.id);
    const original = await s.runtime.db
      .selectFrom('chain_transactions')
      .selectAll()
      .where('hash', '=', first)
      .executeTakeFirstOrThrow();
    // A fee bump that lost the race to the original: same nonce, same calldata, higher fees.
    const parsed = parseTransaction(original.raw_transaction as Hex);
    const bump = await signBatchTransaction(s.chain, {
      nonce: Number(original.nonce),
      data: parsed.data!,
      gas: original.gas_limit,
      maxFeePerGas: original.max_fee_per_gas * 2n,
      maxPriorityFeePerGas: original.max_priority_fee_per_gas * 2n,
    });
    await s.runtime.db
      .insertInto('chain_transactions')
      .values({
        ...original,
        hash: bump.hash,
        raw_transaction: bump.rawTransaction,
        max_fee_per_gas: original.max_fee_per_gas * 2n,
        max_priority_fee_per_gas: original.max_priority_fee_per_gas * 2n,
        status: 'replaced',
        block_number: null,
        block_hash: null,
        gas_used: null,
        effective_gas_price: null,
        created_at: undefined,
      } as never)
      .execute();

    // The reorg drops the original; the sibling is mined in its place (another block), deep enough.
    expect(await s.node.rpc('evm_revert', [snapshot])).toBe(true);
    await s.node.rpc('eth_sendRawTransaction', [bump.rawTransaction]);
    await s.node.mine(2);

    await waitFor('settled again with the sibling', async () => {
      const p = await payment(s.runtime, settled.id);
      return p.status === 'settled' && p.settlement_tx_hash === bump.hash;
    });
    expect(await eventsOf(s.runtime, settled.id)).toEqual([
      'payment.paid',
      'payment.settled',
      'payment.settlement_reverted',
      'payment.settled',
    ]);
    const receipt = await s.chain.publicClient.getTransactionReceipt({ hash: bump.hash });
    const batch = await s.runtime.db
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(batch).toMatchObject({ status: 'confirmed', tx_hash: bump.hash, block_hash: receipt.blockHash });
    expect(batch.gas_used).toBe(receipt.gasUsed);
    const rows = await s.runtime.db
      .selectFrom('chain_transactions')
      .select(['hash', 'status', 'block_hash'])
      .where('batch_id', '=', batchId)
      .orderBy('max_fee_per_gas')
      .execute();
    expect(rows).toEqual([
      { hash: first, status: 'replaced', block_hash: null },
      { hash: bump.hash, status: 'mined', block_hash: receipt.blockHash },
    ]);
    // What `audit verify` compares: the hash the payment shows is the confirmed batch's.
    const shown = await loadSettlementHashes(s.runtime.db, [settled.id]);
    expect(shown).toEqual([expect.objectContaining({ txHash: bump.hash, batchTxHash: bump.hash })]);
    await expectPaidExactlyOnce(s.runtime, s.chain, new Map([[addr!.toLowerCase(), settled.settlement_minor]]));
  });
});

async function transferOf(runtime: Runtime, paymentId: string) {
  return runtime.db.selectFrom('transfers').selectAll().where('source_id', '=', paymentId).executeTakeFirstOrThrow();
}
