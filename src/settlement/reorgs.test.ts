// The reorg watch against a real database and a scripted node: a batch is declared final only from
// a read of its own block (never because a higher batch's block matched), a block the node does not
// return is "look again", not "replaced", and a worker without the relayer lease reverts nothing.

import { BlockNotFoundError, type Hex, TransactionReceiptNotFoundError } from 'viem';
import { describe, expect, it } from 'vitest';
import type { ChainConnection } from '../chain/chain.ts';
import { createLogger } from '../core/logger.ts';
import { testRuntime } from '../../test/support/harness.ts';
import type { ChainSession } from './chain-session.ts';
import { defaultSettlementOptions, type SettlementContext } from './context.ts';
import { watchConfirmedBatches } from './reorgs.ts';

const hash = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`;

async function setup(chainHashes: Map<bigint, Hex | 'missing'>) {
  const runtime = await testRuntime();
  const { db, config } = runtime;
  const key = `31337:${hash(Math.floor(Math.random() * 1e9))}`;
  await db
    .insertInto('chains')
    .values({ chain_key: key, chain_id: 31337, genesis_hash: hash(1), ephemeral: false })
    .execute();
  const publicClient = {
    getBlock: async ({ blockNumber }: { blockNumber: bigint }) => {
      const h = chainHashes.get(blockNumber);
      if (h === undefined || h === 'missing') throw new BlockNotFoundError({ blockNumber });
      return { number: blockNumber, hash: h };
    },
    getTransactionReceipt: async ({ hash: tx }: { hash: Hex }) => {
      throw new TransactionReceiptNotFoundError({ hash: tx });
    },
  };
  const conn = {
    confirmations: 1,
    finalityDepth: 3,
    publicClient,
    batchAddress: hash(3).slice(0, 42),
  } as unknown as ChainConnection;
  const session = {
    conn,
    key,
    chainId: 31337,
    ephemeral: false,
    relayer: hash(2).slice(0, 42),
    asset: 'USDC',
  } as ChainSession;
  const ctx: SettlementContext = {
    toolEnvironment: runtime,
    db,
    config,
    logger: createLogger('silent'),
    clock: { now: () => new Date() } as SettlementContext['clock'],
    options: defaultSettlementOptions(config),
    holder: 'test:1:watch',
    broadcastHere: new Set(),
  };
  const confirmed = async (id: string, height: number, blockHash: Hex): Promise<void> => {
    await db
      .insertInto('settlement_batches')
      .values({
        id,
        batch_key: hash(height + 1000),
        asset: 'USDC',
        status: 'confirmed',
        chain_key: key,
        lines: '[]',
        total_minor: 1n,
        transfer_count: 1,
        tx_hash: hash(height + 2000),
        block_number: BigInt(height),
        block_hash: blockHash,
      })
      .execute();
  };
  const finalized = async (id: string): Promise<boolean> =>
    (await db.selectFrom('settlement_batches').select('finalized_at').where('id', '=', id).executeTakeFirstOrThrow())
      .finalized_at !== null;
  return { db, ctx, session, confirmed, finalized };
}

describe('reorg watch', () => {
  it('finalizes a batch only from its own block, even below a higher block that matches', async () => {
    const chain = new Map<bigint, Hex | 'missing'>([
      [10n, hash(10)],
      [6n, hash(666)], // another block at 6 than the batch recorded
      [5n, 'missing'], // a lagging node: not found
    ]);
    const s = await setup(chain);
    const id = (n: string) => `batch_${n}_${Math.random().toString(36).slice(2)}`;
    const [high, replaced, lagging] = [id('high'), id('replaced'), id('lagging')];
    await s.confirmed(high, 10, hash(10));
    await s.confirmed(replaced, 6, hash(6));
    await s.confirmed(lagging, 5, hash(5));

    const result = await watchConfirmedBatches(s.ctx, s.session, { number: 100n, hash: hash(100) });
    expect(result).toEqual({ reverted: 0, complete: false });
    expect(await s.finalized(high)).toBe(true);
    // Replaced at its height, but this worker holds no relayer lease: not reverted, and never final.
    expect(await s.finalized(replaced)).toBe(false);
    expect(
      (
        await s.db
          .selectFrom('settlement_batches')
          .select('status')
          .where('id', '=', replaced)
          .executeTakeFirstOrThrow()
      ).status,
    ).toBe('confirmed');
    // Not found is not replaced: neither final nor reverted; looked at again.
    expect(await s.finalized(lagging)).toBe(false);

    chain.set(5n, hash(5));
    const again = await watchConfirmedBatches(s.ctx, s.session, { number: 100n, hash: hash(100) });
    expect(again.complete).toBe(false); // the replaced one is still waiting for a lease holder
    expect(await s.finalized(lagging)).toBe(true);
    expect(await s.finalized(replaced)).toBe(false);
  });
});
