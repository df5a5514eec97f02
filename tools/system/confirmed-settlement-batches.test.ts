// record_settlement_batch_block: a confirmed batch whose own transaction is mined again in another
// block records that block on the batch and on its transaction together; a batch confirmed with
// another transaction is left alone. finalize_settlement_batches: the named confirmed batches of a
// chain become final, or, without names, every one of it; another chain's are left alone. Neither
// acts for a merchant: no action-log row.

import type { Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { receiptInput } from '../../src/domain/batch-receipts.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { chainFacts } from '../../src/settlement/batches.ts';
import { receiptOf, toBatchReceipt } from '../../src/settlement/relayer.ts';
import {
  actionsOfTool,
  batchRow,
  batchStepsHarness,
  planOneBatch,
  queuedPayments,
  sendPlannedBatch,
} from '../../test/support/batch-steps.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { finalizeSettlementBatches, recordSettlementBatchBlock } from './confirmed-settlement-batches.ts';
import { confirmSettlementBatch } from './settlement-batches.ts';

const steps = batchStepsHarness();

/**
 * A batch paid on the devnet and confirmed as on a chain that can reorganise (not final at once, so
 * the reorg watch would follow it). Returns its id and transaction.
 */
async function confirmedBatch(): Promise<{ batchId: string; txHash: string }> {
  const { runtime, session } = steps;
  const merchant = await testAccount(runtime);
  await queuedPayments(runtime, merchant.accountId, 1);
  const batchId = await planOneBatch(steps);
  await sendPlannedBatch(steps);
  const tx = await runtime.db
    .selectFrom('chain_transactions')
    .select('hash')
    .where('batch_id', '=', batchId)
    .executeTakeFirstOrThrow();
  const receipt = await receiptOf(session, tx.hash as Hex);
  if (!receipt) throw new Error(`batch ${batchId}'s transaction was not mined`);
  const confirmed = await runSystemTool(runtime, confirmSettlementBatch, {
    batch_id: batchId,
    chain: { ...chainFacts(session), ephemeral: false },
    receipt: receiptInput(toBatchReceipt(session, receipt)),
  });
  expect(confirmed.confirmed).toBe(true);
  expect((await batchRow(runtime, batchId)).finalized_at).toBeNull();
  return { batchId, txHash: tx.hash };
}

async function transactionBlock(hash: string) {
  return steps.runtime.db
    .selectFrom('chain_transactions')
    .select(['block_number', 'block_hash'])
    .where('hash', '=', hash)
    .executeTakeFirstOrThrow();
}

describe('record_settlement_batch_block and finalize_settlement_batches', () => {
  it('are refused on every channel but system', async () => {
    const merchant = await testAccount(steps.runtime);
    const scope = testMode(merchant.accountId);
    const block = { block_number: '7', block_hash: `0x${'7'.repeat(64)}` };
    const mined = { batch_id: 'b', chain_key: 'c', tx_hash: `0x${'1'.repeat(64)}`, ...block };
    await expectRefusedOffSystem(steps.runtime, recordSettlementBatchBlock, mined, scope);
    await expectRefusedOffSystem(steps.runtime, finalizeSettlementBatches, { chain_key: 'c' }, scope);
  });

  it("records the new block on the batch and on its transaction together; another transaction's batch is left alone", async () => {
    const { runtime, session } = steps;
    const { batchId, txHash } = await confirmedBatch();
    const before = await batchRow(runtime, batchId);
    const moved = { block_number: '424242', block_hash: `0x${'4'.repeat(64)}` };

    await runSystemTool(runtime, recordSettlementBatchBlock, {
      batch_id: batchId,
      chain_key: session.key,
      tx_hash: `0x${'9'.repeat(64)}`,
      ...moved,
    });
    expect(await batchRow(runtime, batchId)).toMatchObject({
      block_number: before.block_number,
      block_hash: before.block_hash,
    });

    await runSystemTool(runtime, recordSettlementBatchBlock, {
      batch_id: batchId,
      chain_key: session.key,
      tx_hash: txHash,
      ...moved,
    });
    const expected = { block_number: 424242n, block_hash: moved.block_hash };
    expect(await batchRow(runtime, batchId)).toMatchObject({ status: 'confirmed', tx_hash: txHash, ...expected });
    expect(await transactionBlock(txHash)).toEqual(expected);
    expect(await actionsOfTool(runtime, 'record_settlement_batch_block')).toBe(0);
  });

  it('finalizes the named confirmed batches of a chain, or all of them; never those of another chain', async () => {
    const { runtime, session } = steps;
    const first = await confirmedBatch();
    const second = await confirmedBatch();
    const final = async (id: string) => (await batchRow(runtime, id)).finalized_at !== null;

    await runSystemTool(runtime, finalizeSettlementBatches, { chain_key: 'another-chain', batch_ids: [first.batchId] });
    expect(await final(first.batchId)).toBe(false);

    await runSystemTool(runtime, finalizeSettlementBatches, { chain_key: session.key, batch_ids: [first.batchId] });
    expect([await final(first.batchId), await final(second.batchId)]).toEqual([true, false]);

    await runSystemTool(runtime, finalizeSettlementBatches, { chain_key: session.key });
    expect(await final(second.batchId)).toBe(true);
    expect(await actionsOfTool(runtime, 'finalize_settlement_batches')).toBe(0);
  });
});
