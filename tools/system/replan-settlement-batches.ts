import { z } from 'zod';
import { defineTool } from '../../src/core/tool.ts';
import { recordBatchesReplanned, recordGoneDevnetBatchesFinal } from '../../src/db/money-writes/settlement-batches.ts';
import { rebatchSentTransfers } from '../../src/db/money-writes/transfers.ts';
import { lockBatchesById } from '../../src/db/repositories/settlement-batches.ts';
import { forNoMerchant } from './scopes.ts';

const chainKey = z.string().min(1).max(200);

/**
 * Sent batches of a chain that is gone for good go back to `planned` with the same batch id, their
 * transfers to `batched`, to be signed on the current chain: the settlement worker's step for an
 * in-process devnet that no longer exists (src/settlement/batches.ts), and the operator's
 * `plainpay chain adopt --old-chain-gone` (src/settlement/chain-health.ts). Safe only because the old
 * chain, with every transaction on it, is gone, and the new chain's contract has never seen the
 * batch ids; the callers decide that. Each batch is locked and re-read first: one no longer sent on
 * that chain (another worker moved it) is left alone.
 */
export const replanSettlementBatches = defineTool({
  name: 'replan_settlement_batches',
  title: 'Re-plan settlement batches of a chain that is gone',
  description: 'Puts batches sent on a chain that is gone back to planned, to be signed on the current chain.',
  input: z.strictObject({
    batch_ids: z.array(z.string().min(1).max(100)).min(1).describe('The sent batches, as the caller found them.'),
    chain_key: chainKey.describe('The chain they were sent on, which is gone.'),
    reason: z.string().min(1).max(500).describe('Why their signed transactions are dropped.'),
  }),
  output: z.object({ replanned: z.array(z.string()).describe('The batches planned again.') }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    const locked = await lockBatchesById(db, input.batch_ids);
    const replanned = locked.filter((b) => b.status === 'sent' && b.chain_key === input.chain_key).map((b) => b.id);
    if (replanned.length === 0) return { replanned };
    await recordBatchesReplanned(db, replanned, input.reason);
    await rebatchSentTransfers(db, replanned);
    return { replanned };
  },
});

/**
 * Confirmed batches of in-process devnets that are gone (ephemeral, not the current chain, no live
 * lease on them) are final: a chain that no longer exists can reorganise nothing. The settlement
 * worker's step beside re-planning their sent batches (src/settlement/batches.ts).
 */
export const finalizeGoneDevnetBatches = defineTool({
  name: 'finalize_gone_devnet_batches',
  title: 'Finalize the confirmed batches of devnets that are gone',
  description: 'Marks the confirmed settlement batches of in-process devnets that no longer exist final.',
  input: z.strictObject({ current_chain_key: chainKey.describe('The chain this worker signs for now.') }),
  output: z.object({ current_chain_key: z.string() }),
  effect: 'money',
  scope: 'payouts:write',
  system: forNoMerchant(),
  async handler(input, { db }) {
    await recordGoneDevnetBatchesFinal(db, input.current_chain_key);
    return { current_chain_key: input.current_chain_key };
  },
});
