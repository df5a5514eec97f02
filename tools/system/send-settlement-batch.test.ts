// record_settlement_batch_sent: in the relayer's transaction that stored the signed bytes, a planned
// batch becomes `sent` on its chain with its transfers, and rolls back with that transaction.
// record_settlement_batch_nonce: a sent batch's nonce used on chain (since now) or free again; a
// batch no longer sent is left alone. Neither acts for a merchant: no action-log row.

import { describe, expect, it } from 'vitest';
import { runSystemTool, runSystemToolIn } from '../../src/pipeline/system-runs.ts';
import {
  actionsOfTool,
  batchRow,
  batchStepsHarness,
  planOneBatch,
  queuedPayments,
  transfersOf,
} from '../../test/support/batch-steps.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { recordSettlementBatchNonce, recordSettlementBatchSent } from './send-settlement-batch.ts';

const steps = batchStepsHarness();

class RelayerFailed extends Error {}

describe('record_settlement_batch_sent and record_settlement_batch_nonce', () => {
  it('are refused on every channel but system', async () => {
    const merchant = await testAccount(steps.runtime);
    const scope = testMode(merchant.accountId);
    await expectRefusedOffSystem(steps.runtime, recordSettlementBatchSent, { batch_id: 'b', chain_key: 'c' }, scope);
    await expectRefusedOffSystem(steps.runtime, recordSettlementBatchNonce, { batch_id: 'b', used: true }, scope);
  });

  it("marks a planned batch and its transfers sent with the caller's transaction, never without it", async () => {
    const { runtime, session } = steps;
    const merchant = await testAccount(runtime);
    const paid = await queuedPayments(runtime, merchant.accountId, 2);
    const batchId = await planOneBatch(steps);
    const input = { batch_id: batchId, chain_key: session.key };

    // The relayer's transaction fails after the run (say, storing the signed bytes): nothing is sent.
    await expect(
      runtime.db.transaction().execute(async (trx) => {
        await runSystemToolIn(trx, runtime, recordSettlementBatchSent, input);
        throw new RelayerFailed('the signed transaction could not be stored');
      }),
    ).rejects.toBeInstanceOf(RelayerFailed);
    expect((await batchRow(runtime, batchId)).status).toBe('planned');
    expect((await transfersOf(runtime, paid)).map((t) => t.status)).toEqual(['batched', 'batched']);

    await runtime.db.transaction().execute((trx) => runSystemToolIn(trx, runtime, recordSettlementBatchSent, input));
    const batch = await batchRow(runtime, batchId);
    expect(batch).toMatchObject({ status: 'sent', chain_key: session.key, nonce_used_at: null });
    expect(batch.sent_at).not.toBeNull();
    expect((await transfersOf(runtime, paid)).map((t) => t.status)).toEqual(['sent', 'sent']);
    expect(await actionsOfTool(runtime, 'record_settlement_batch_sent')).toBe(0);
  });

  it("records a sent batch's nonce used, then free again, and leaves a batch that is not sent alone", async () => {
    const { runtime, session } = steps;
    const merchant = await testAccount(runtime);
    await queuedPayments(runtime, merchant.accountId, 1);
    const sentId = await planOneBatch(steps);
    await runtime.db
      .transaction()
      .execute((trx) =>
        runSystemToolIn(trx, runtime, recordSettlementBatchSent, { batch_id: sentId, chain_key: session.key }),
      );

    await runSystemTool(runtime, recordSettlementBatchNonce, { batch_id: sentId, used: true });
    expect((await batchRow(runtime, sentId)).nonce_used_at).not.toBeNull();
    await runSystemTool(runtime, recordSettlementBatchNonce, { batch_id: sentId, used: false });
    expect((await batchRow(runtime, sentId)).nonce_used_at).toBeNull();

    await queuedPayments(runtime, merchant.accountId, 1);
    const plannedId = await planOneBatch(steps);
    await runSystemTool(runtime, recordSettlementBatchNonce, { batch_id: plannedId, used: true });
    expect((await batchRow(runtime, plannedId)).nonce_used_at).toBeNull();
    expect(await actionsOfTool(runtime, 'record_settlement_batch_nonce')).toBe(0);
  });
});
