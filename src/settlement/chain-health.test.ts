// Chain identity against a real database: the first chain is recorded, another one is refused and
// shows in readiness until the node serves the expected chain again or an operator adopts it; an
// old chain is declared gone only when it is a local development node; a worker connected for another
// chain id is told to restart, not to adopt.

import { describe, expect, it } from 'vitest';
import { createLogger } from '../core/logger.ts';
import { testRuntime } from '../../test/support/harness.ts';
import { adoptObservedChain, ChainAdoptionError, chainReadiness, verifyChainIdentity } from './chain-health.ts';
import type { ChainIdentity } from './chain-session.ts';

const logger = createLogger('silent');

function identity(chainId: number, genesis: string): ChainIdentity {
  const genesisHash = `0x${genesis.padStart(64, '0')}`;
  return { key: `${chainId}:${genesisHash}`, chainId, genesisHash };
}

describe('chain identity', () => {
  it('records the first chain, refuses another (readiness), clears when the expected one is back, adopts on request', async () => {
    const runtime = await testRuntime();
    const { db } = runtime;
    await db.deleteFrom('settlement_chain').execute();
    const a = identity(31337, 'a1');
    const b = identity(31337, 'b2');

    expect(await verifyChainIdentity(db, a, 31337, logger)).toEqual({ ok: true });
    expect(await chainReadiness({ db })).toEqual({ ready: true });

    const refused = await verifyChainIdentity(db, b, 31337, logger);
    expect(refused).toMatchObject({ ok: false, expected: { key: a.key }, observed: b });
    expect(await chainReadiness({ db })).toMatchObject({ ready: false });

    // The node serves the expected chain again: nothing to adopt, ready again.
    expect(await verifyChainIdentity(db, a, 31337, logger)).toEqual({ ok: true });
    expect(await chainReadiness({ db })).toEqual({ ready: true });
    await expect(adoptObservedChain(runtime, b.key, { oldChainGone: false })).rejects.toThrow(ChainAdoptionError);

    // Another chain again, and the operator accepts it.
    await verifyChainIdentity(db, b, 31337, logger);
    await expect(adoptObservedChain(runtime, a.key, { oldChainGone: false })).rejects.toThrow(/observed chain is/);
    expect(await adoptObservedChain(runtime, b.key, { oldChainGone: false })).toEqual({
      previous: a.key,
      adopted: b.key,
      strandedBatches: 0,
      replannedBatches: 0,
    });
    expect(await verifyChainIdentity(db, b, 31337, logger)).toEqual({ ok: true });
    // The same chain key with another chain id than the worker signs with: refused, restart needed.
    expect(await verifyChainIdentity(db, b, 1, logger)).toMatchObject({ ok: false, reason: /restart the worker/ });
  });

  it('declares an old chain gone only when it is a local development node', async () => {
    const runtime = await testRuntime();
    const { db } = runtime;
    for (const chainId of [1, 8453, 56, 999_999]) {
      await db.deleteFrom('settlement_chain').execute();
      const live = identity(chainId, `c${chainId}`);
      const other = identity(chainId, `d${chainId}`);
      await verifyChainIdentity(db, live, chainId, logger);
      await verifyChainIdentity(db, other, chainId, logger);
      await expect(adoptObservedChain(runtime, other.key, { oldChainGone: true })).rejects.toThrow(
        /not a local development node/,
      );
      expect((await adoptObservedChain(runtime, other.key, { oldChainGone: false })).adopted).toBe(other.key);
    }
    await db.deleteFrom('settlement_chain').execute();
    const reset = identity(31337, 'e5');
    const fresh = identity(31337, 'f6');
    await verifyChainIdentity(db, reset, 31337, logger);
    await verifyChainIdentity(db, fresh, 31337, logger);
    expect((await adoptObservedChain(runtime, fresh.key, { oldChainGone: true })).adopted).toBe(fresh.key);
  });

  it('a worker connected for another chain id is told to restart; nothing is recorded to adopt', async () => {
    const runtime = await testRuntime();
    const { db } = runtime;
    await db.deleteFrom('settlement_chain').execute();
    const a = identity(8453, 'a7');
    await verifyChainIdentity(db, a, 8453, logger);
    expect(await verifyChainIdentity(db, a, 1, logger)).toMatchObject({ ok: false, reason: /restart the worker/ });
    expect(await chainReadiness({ db })).toEqual({ ready: true });
    await expect(adoptObservedChain(runtime, a.key, { oldChainGone: false })).rejects.toThrow(
      /no other chain was observed/,
    );
    // A row an older worker recorded that way (observed = expected) is refused with the same advice.
    await db
      .updateTable('settlement_chain')
      .set({ observed_chain_key: a.key, observed_chain_id: 8453, observed_genesis_hash: a.genesisHash })
      .execute();
    await expect(adoptObservedChain(runtime, a.key, { oldChainGone: false })).rejects.toThrow(
      /restart or a configuration fix/,
    );
  });
});
