import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { recordBatchNonceUsed, recordBatchSent } from '../../src/db/money-writes/settlement-batches.ts';
import { sendBatchTransfers } from '../../src/db/money-writes/transfers.ts';
import { forNoMerchant } from './scopes.ts';

const batchId = z.string().min(1).max(100).describe('The settlement batch.');

/**
 * The relayer's step once a planned batch's transaction is signed (src/settlement/relayer.ts), run
 * in the relayer's transaction that allocated its nonce and stored the raw signed transaction,
 * before the first broadcast: the batch is `sent` on this chain, and so are its transfers, together
 * with the stored bytes or not at all. No ledger money moves: it is in flight already.
 */
export const recordSettlementBatchSent = defineTool({
  name: 'record_settlement_batch_sent',
  title: 'Record a settlement batch signed and stored',
  description: 'Marks a planned settlement batch and its transfers sent, once its signed transaction is stored.',
  input: z.strictObject({
    batch_id: batchId,
    chain_key: z.string().min(1).max(200).describe('The chain its transaction was signed for.'),
  }),
  output: z.object({ batch_id: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    await recordBatchSent(db, input.batch_id, input.chain_key);
    await sendBatchTransfers(db, input.batch_id);
    return { batch_id: input.batch_id };
  },
});

/**
 * The tracker's note on a sent batch (src/settlement/relayer.ts): its nonce is used on chain with
 * no successful receipt of its own, so it only waits for the finality depth before it can be
 * declared failed (the stuck-batch alarm gives it longer); or the nonce is free again after a reorg.
 */
export const recordSettlementBatchNonce = defineTool({
  name: 'record_settlement_batch_nonce',
  title: "Record whether a sent settlement batch's nonce is used",
  description: "Records that a sent settlement batch's nonce is used by a mined transaction, or free again.",
  input: z.strictObject({
    batch_id: batchId,
    used: z.boolean().describe('True: used on chain from now; false: free again.'),
  }),
  output: z.object({ batch_id: z.string(), used: z.boolean() }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    await recordBatchNonceUsed(db, input.batch_id, input.used);
    return { batch_id: input.batch_id, used: input.used };
  },
});
