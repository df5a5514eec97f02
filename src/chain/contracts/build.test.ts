import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { batchPayoutAbi, plainUsdAbi } from './abis.ts';
import { compileContracts, contractNames } from './build.ts';
import { batchPayoutBytecode, plainUsdBytecode } from './bytecode.ts';

// The service deploys the committed bytecode, not a fresh compile: this fails when someone edits a
// .sol file and forgets `npm run contracts:build`.
describe('committed contract artifacts', () => {
  const compiled = compileContracts();

  it('match a fresh compile of the sources (artifacts/*.json)', () => {
    for (const name of contractNames) {
      const committed = JSON.parse(readFileSync(new URL(`./artifacts/${name}.json`, import.meta.url), 'utf8'));
      expect(committed).toEqual(JSON.parse(JSON.stringify(compiled[name])));
    }
  });

  it('match a fresh compile of the sources (abis.ts, bytecode.ts)', () => {
    expect(plainUsdAbi).toEqual(compiled.PlainUSD.abi);
    expect(batchPayoutAbi).toEqual(compiled.BatchPayout.abi);
    expect(plainUsdBytecode).toBe(compiled.PlainUSD.bytecode);
    expect(batchPayoutBytecode).toBe(compiled.BatchPayout.bytecode);
  });

  it('expose the interface the service relies on', () => {
    const names = (abi: readonly { type: string; name?: string }[]): string[] =>
      abi.filter((x) => x.type === 'function' || x.type === 'event').map((x) => x.name ?? '');
    expect(names(plainUsdAbi)).toEqual(
      expect.arrayContaining([
        ...['transfer', 'transferFrom', 'approve', 'balanceOf', 'decimals', 'mint', 'Transfer'],
        // EIP-3009 as USDC has it: x402's `exact` scheme and the checkout's "Pay with USDC" use these.
        ...['transferWithAuthorization', 'receiveWithAuthorization', 'cancelAuthorization', 'authorizationState'],
        ...['version', 'DOMAIN_SEPARATOR', 'AuthorizationUsed', 'AuthorizationCanceled'],
      ]),
    );
    expect(names(batchPayoutAbi)).toEqual(
      expect.arrayContaining(['payout', 'paid', 'relayer', 'setRelayer', 'BatchPaid']),
    );
  });
});
