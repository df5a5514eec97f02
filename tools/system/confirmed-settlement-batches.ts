import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { recordBatchesFinal, recordBatchMinedAgain } from '../../src/db/money-writes/settlement-batches.ts';
import { forNoMerchant } from './scopes.ts';

const chainKey = z.string().min(1).max(200);
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);

/**
 * The reorg watch's step when a confirmed batch's block was replaced but its own transaction is
 * mined again, deep enough, in another block (src/settlement/reorgs.ts): the settlement stands, and
 * the batch and its transaction record the new block in one transaction. A batch no longer
 * confirmed with that transaction is left alone.
 */
export const recordSettlementBatchBlock = defineTool({
  name: 'record_settlement_batch_block',
  title: "Record a confirmed settlement batch's new block",
  description: "Records the block a confirmed settlement batch's transaction was mined in again after a reorg.",
  input: z.strictObject({
    batch_id: z.string().min(1).max(100).describe('The confirmed settlement batch.'),
    chain_key: chainKey.describe('The chain it is confirmed on.'),
    tx_hash: hex.describe('Its transaction, as the batch recorded it.'),
    block_number: z
      .string()
      .regex(/^\d{1,78}$/)
      .describe('The block it is mined in now.'),
    block_hash: hex.describe("That block's hash."),
  }),
  output: z.object({ batch_id: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    await recordBatchMinedAgain(db, {
      batchId: input.batch_id,
      chainKey: input.chain_key,
      txHash: input.tx_hash,
      blockNumber: BigInt(input.block_number),
      blockHash: input.block_hash,
    });
    return { batch_id: input.batch_id };
  },
});

/**
 * Confirmed batches no reorg will undo any more: those the reorg watch found at the finality depth
 * on their own block (src/settlement/reorgs.ts), or, without names, every one of a chain settlement
 * stops following (the operator's `plainpay chain adopt`). Batches no longer confirmed on that
 * chain, or final already, are left alone.
 */
export const finalizeSettlementBatches = defineTool({
  name: 'finalize_settlement_batches',
  title: 'Finalize confirmed settlement batches',
  description: 'Marks confirmed settlement batches of a chain final: the reorg watch stops following them.',
  input: z.strictObject({
    chain_key: chainKey.describe('The chain the batches are confirmed on.'),
    batch_ids: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(1000)
      .optional()
      .describe('The batches; absent: every confirmed batch of the chain that is not final.'),
  }),
  output: z.object({ chain_key: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    await recordBatchesFinal(db, input.chain_key, input.batch_ids);
    return { chain_key: input.chain_key };
  },
});
