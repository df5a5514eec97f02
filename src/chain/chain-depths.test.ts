// The default confirmation and finality depths per chain id, used when CONFIRMATIONS is not set
// (docs/configuration.md, "Confirmation depth").

import { describe, expect, it } from 'vitest';
import { chainSafetyDepths, connectChain } from './chain.ts';

describe('chainSafetyDepths', () => {
  it('gives each known chain its documented depths, and never a finality shallower than confirmation', () => {
    const table: [number, number, number][] = [
      [1, 12, 64],
      [8453, 15, 900],
      [10, 15, 900],
      [42161, 40, 4_000],
      [137, 64, 256],
      [42220, 30, 1_800],
      [31337, 1, 32],
    ];
    for (const [chainId, confirmations, finalityDepth] of table) {
      expect(chainSafetyDepths(chainId), `chain ${chainId}`).toEqual({ confirmations, finalityDepth, known: true });
    }
  });

  it('is as cautious as Ethereum mainnet for a chain it does not know', () => {
    expect(chainSafetyDepths(999_999)).toEqual({ confirmations: 12, finalityDepth: 128, known: false });
  });

  it('applies to a connection without CONFIRMATIONS; a configured depth wins and raises the watch with it', async () => {
    const byDefault = await connectChain({});
    const configured = await connectChain({ confirmations: 40 });
    try {
      expect([byDefault.confirmations, byDefault.finalityDepth]).toEqual([1, 32]);
      expect([configured.confirmations, configured.finalityDepth]).toEqual([40, 40]);
    } finally {
      await byDefault.close();
      await configured.close();
    }
  });
});
