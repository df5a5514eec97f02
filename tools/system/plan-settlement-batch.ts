import { z } from 'zod';
import { batchIdFromKey } from '../../src/chain/chain.ts';
import { defineTool } from '../../src/core/tool.ts';
import { recordBatchPlanned } from '../../src/db/money-writes/settlement-batches.ts';
import { batchQueuedTransfers } from '../../src/db/money-writes/transfers.ts';
import { newId } from '../../src/domain/ids.ts';
import { forNoMerchant } from './scopes.ts';

/**
 * The batch planner's step (src/settlement/batches.ts), run in the planner's transaction, which
 * holds the due transfers locked (FOR UPDATE SKIP LOCKED): one planned batch that pays each
 * recipient one netted line, and its transfers moved queued → batched by compare-and-set, so two
 * planners never put one transfer in two batches. No ledger money moves: it is in flight already.
 */
export const planSettlementBatch = defineTool({
  name: 'plan_settlement_batch',
  title: 'Plan a settlement batch',
  description: 'Puts locked queued transfers into a new planned settlement batch of netted lines.',
  input: z.strictObject({
    asset: z.string().min(1).max(16).describe('The settlement asset every line is paid in.'),
    transfer_ids: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(5000)
      .describe('The queued transfers the batch carries, held locked by the caller.'),
    lines: z
      .array(
        z.strictObject({
          recipient: z
            .string()
            .regex(/^0x[0-9a-fA-F]{40}$/)
            .describe('The address paid.'),
          amount: z
            .string()
            .regex(/^\d{1,78}$/)
            .describe('Minor units paid to it: its transfers netted.'),
        }),
      )
      .min(1)
      .max(5000)
      .describe('One line per recipient, in the order the batch call pays them.'),
  }),
  output: z.object({ batch_id: z.string().describe('The planned batch.') }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    const id = newId('batch');
    await recordBatchPlanned(db, {
      id,
      batchKey: batchIdFromKey(id),
      asset: input.asset,
      lines: input.lines,
      transferIds: input.transfer_ids,
    });
    const moved = await batchQueuedTransfers(db, id, input.transfer_ids);
    if (moved !== input.transfer_ids.length) throw new Error('a locked queued transfer changed under its lock');
    return { batch_id: id };
  },
});
