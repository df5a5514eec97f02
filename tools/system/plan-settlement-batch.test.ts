// plan_settlement_batch: run in the planner's transaction over the queued transfers it locked, it
// writes one planned batch of netted lines and moves those transfers queued → batched; a transfer
// no longer queued refuses the whole batch, and the caller's transaction writes nothing. It acts for
// no merchant: no action-log row.

import { describe, expect, it } from 'vitest';
import { batchIdFromKey } from '../../src/chain/chain.ts';
import type { Transaction } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { runSystemToolIn } from '../../src/pipeline/system-runs.ts';
import {
  actionsOfTool,
  batchRow,
  batchStepsHarness,
  queuedPayments,
  transfersOf,
} from '../../test/support/batch-steps.ts';
import { testAccount } from '../../test/support/harness.ts';
import { expectRefusedOffSystem, testMode } from '../../test/support/system-tools.ts';
import { planSettlementBatch } from './plan-settlement-batch.ts';

const steps = batchStepsHarness();

/** The transfers locked as the planner locks them, in the caller's transaction. */
async function lockQueued(trx: Transaction<Database>, ids: readonly string[]) {
  return trx.selectFrom('transfers').selectAll().where('id', 'in', ids).orderBy('id').forUpdate().execute();
}

describe('plan_settlement_batch', () => {
  it('is refused on every channel but system', async () => {
    const merchant = await testAccount(steps.runtime);
    await expectRefusedOffSystem(
      steps.runtime,
      planSettlementBatch,
      {
        asset: 'USDC',
        transfer_ids: ['tx_x'],
        lines: [{ recipient: `0x${'1'.repeat(40)}`, amount: '1' }],
      },
      testMode(merchant.accountId),
    );
  });

  it('plans the locked queued transfers into one batch of netted lines and moves them batched', async () => {
    const { runtime } = steps;
    const merchant = await testAccount(runtime);
    const paid = await queuedPayments(runtime, merchant.accountId, 2);
    const queued = await transfersOf(runtime, paid);
    const lines = queued.map((t) => ({ recipient: t.recipient, amount: t.amount_minor.toString() }));

    const { batch_id: batchId } = await runtime.db.transaction().execute(async (trx) => {
      await lockQueued(
        trx,
        queued.map((t) => t.id),
      );
      return runSystemToolIn(trx, runtime, planSettlementBatch, {
        asset: 'USDC',
        transfer_ids: queued.map((t) => t.id),
        lines,
      });
    });

    const batch = await batchRow(runtime, batchId);
    expect(batch).toMatchObject({
      status: 'planned',
      asset: 'USDC',
      chain_key: null,
      batch_key: batchIdFromKey(batchId),
      transfer_count: 2,
      total_minor: queued[0]!.amount_minor + queued[1]!.amount_minor,
    });
    expect(batch.lines).toEqual(lines);
    const carried = await runtime.db
      .selectFrom('settlement_batch_transfers')
      .select('transfer_id')
      .where('batch_id', '=', batchId)
      .orderBy('transfer_id')
      .execute();
    expect(carried.map((c) => c.transfer_id)).toEqual(queued.map((t) => t.id));
    expect((await transfersOf(runtime, paid)).map((t) => [t.status, t.batch_id])).toEqual([
      ['batched', batchId],
      ['batched', batchId],
    ]);
    expect(await actionsOfTool(runtime, 'plan_settlement_batch')).toBe(0);
  });

  it('refuses a transfer that is no longer queued, and the caller writes nothing', async () => {
    const { runtime } = steps;
    const merchant = await testAccount(runtime);
    const paid = await queuedPayments(runtime, merchant.accountId, 1);
    const [transfer] = await transfersOf(runtime, paid);
    const input = {
      asset: 'USDC',
      transfer_ids: [transfer!.id],
      lines: [{ recipient: transfer!.recipient, amount: transfer!.amount_minor.toString() }],
    };
    const first = await runtime.db
      .transaction()
      .execute((trx) => runSystemToolIn(trx, runtime, planSettlementBatch, input));
    const batchesBefore = await runtime.db.selectFrom('settlement_batches').select('id').execute();

    await expect(
      runtime.db.transaction().execute((trx) => runSystemToolIn(trx, runtime, planSettlementBatch, input)),
    ).rejects.toThrow(/changed under its lock/);
    expect(await runtime.db.selectFrom('settlement_batches').select('id').execute()).toEqual(batchesBefore);
    expect((await transfersOf(runtime, paid)).map((t) => [t.status, t.batch_id])).toEqual([
      ['batched', first.batch_id],
    ]);
  });
});
