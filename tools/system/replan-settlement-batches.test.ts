// replan_settlement_batches: sent batches of a chain that is gone go back to `planned` (same batch
// id, no chain, not sent), their unmined transactions dropped with the reason and their transfers
// `batched` again; a batch no longer sent on that chain is left alone. finalize_gone_devnet_batches:
// confirmed batches of an in-process devnet that is not the current chain become final once no
// live lease holds it. Neither acts for a merchant: no action-log row.

import type { Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { receiptInput } from '../../src/domain/batch-receipts.ts';
import { runSystemTool } from '../../src/pipeline/system-runs.ts';
import { chainFacts } from '../../src/settlement/batches.ts';
import { releaseRelayerLease } from '../../src/settlement/relayer-lease.ts';
import { receiptOf, toBatchReceipt } from '../../src/settlement/relayer.ts';
import {
  actionsOfTool,
  batchRow,
  batchStepsHarness,
  planOneBatch,
  queuedPayments,
  sendPlannedBatch,
  transfersOf,
} from '../../test/support/batch-steps.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { finalizeGoneDevnetBatches, replanSettlementBatches } from './replan-settlement-batches.ts';
import { confirmSettlementBatch } from './settlement-batches.ts';

const steps = batchStepsHarness();

const GONE = 'the chain this was signed for is gone (test)';

async function transactionsOf(batchId: string) {
  return steps.runtime.db
    .selectFrom('chain_transactions')
    .select(['hash', 'status', 'last_error'])
    .where('batch_id', '=', batchId)
    .execute();
}

describe('replan_settlement_batches and finalize_gone_devnet_batches', () => {
  it('are refused on every channel but system', async () => {
    const merchant = await testAccount(steps.runtime);
    const scope = testMode(merchant.accountId);
    const replan = { batch_ids: ['b'], chain_key: 'c', reason: GONE };
    await expectRefusedOffSystem(steps.runtime, replanSettlementBatches, replan, scope);
    await expectRefusedOffSystem(steps.runtime, finalizeGoneDevnetBatches, { current_chain_key: 'c' }, scope);
  });

  it("finalizes a devnet's confirmed batches once it is not current and no live lease holds it", async () => {
    const { runtime, session, ctx } = steps;
    const merchant = await testAccount(runtime);
    await queuedPayments(runtime, merchant.accountId, 1);
    const batchId = await planOneBatch(steps);
    await sendPlannedBatch(steps);
    const tx = await runtime.db
      .selectFrom('chain_transactions')
      .select('hash')
      .where('batch_id', '=', batchId)
      .where('status', '!=', 'dropped')
      .executeTakeFirstOrThrow();
    const receipt = await receiptOf(session, tx.hash as Hex);
    if (!receipt) throw new Error(`batch ${batchId}'s transaction was not mined`);
    // Confirmed as on a chain that can reorganise: not final at once.
    await runSystemTool(runtime, confirmSettlementBatch, {
      batch_id: batchId,
      chain: { ...chainFacts(session), ephemeral: false },
      receipt: receiptInput(toBatchReceipt(session, receipt)),
    });
    const final = async () => (await batchRow(runtime, batchId)).finalized_at !== null;

    // The current chain is never gone.
    await runSystemTool(runtime, finalizeGoneDevnetBatches, { current_chain_key: session.key });
    expect(await final()).toBe(false);
    // Another chain is current, but this devnet's lease is live: its process may still be running.
    await runSystemTool(runtime, finalizeGoneDevnetBatches, { current_chain_key: 'another-devnet' });
    expect(await final()).toBe(false);

    await releaseRelayerLease(ctx, session);
    await runSystemTool(runtime, finalizeGoneDevnetBatches, { current_chain_key: 'another-devnet' });
    expect(await final()).toBe(true);
    expect(await actionsOfTool(runtime, 'finalize_gone_devnet_batches')).toBe(0);
  });

  it('puts the sent batches of a gone chain back to planned, their transfers batched; others are left alone', async () => {
    const { runtime, session } = steps;
    const merchant = await testAccount(runtime);
    const paid = await queuedPayments(runtime, merchant.accountId, 2);
    const batchId = await planOneBatch(steps);
    await sendPlannedBatch(steps);
    expect((await transfersOf(runtime, paid)).map((t) => t.status)).toEqual(['sent', 'sent']);

    // Sent on this chain, not on the one named: left alone.
    const elsewhere = await runSystemTool(runtime, replanSettlementBatches, {
      batch_ids: [batchId],
      chain_key: 'another-chain',
      reason: GONE,
    });
    expect(elsewhere.replanned).toEqual([]);
    expect((await batchRow(runtime, batchId)).status).toBe('sent');

    const replanned = await runSystemTool(runtime, replanSettlementBatches, {
      batch_ids: [batchId],
      chain_key: session.key,
      reason: GONE,
    });
    expect(replanned.replanned).toEqual([batchId]);
    expect(await batchRow(runtime, batchId)).toMatchObject({ status: 'planned', chain_key: null, sent_at: null });
    expect((await transactionsOf(batchId)).map((t) => [t.status, t.last_error])).toEqual([['dropped', GONE]]);
    expect((await transfersOf(runtime, paid)).map((t) => [t.status, t.batch_id])).toEqual([
      ['batched', batchId],
      ['batched', batchId],
    ]);

    // A second run finds the batch planned already: nothing changes.
    expect(
      (
        await runSystemTool(runtime, replanSettlementBatches, {
          batch_ids: [batchId],
          chain_key: session.key,
          reason: GONE,
        })
      ).replanned,
    ).toEqual([]);
    expect(await actionsOfTool(runtime, 'replan_settlement_batches')).toBe(0);
  });
});
