// Test support for x402 settle: exact-scheme payments signed as @x402/evm's client signs them.

import { keccak256, toHex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { ChainConnection } from '../../src/chain/chain.ts';
import { caip2, type PaymentPayload, type PaymentRequirements } from '../../src/x402/messages.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES, x402Target } from '../../src/x402/verify-exact.ts';

/** A payment of `value` by `payer` to plainpay's treasury: its payload and the requirements it answers. */
export async function signExactPayment(
  chain: ChainConnection,
  payer: PrivateKeyAccount,
  value: bigint,
  window?: { validAfter: bigint; validBefore: bigint },
): Promise<{ payload: PaymentPayload; requirements: PaymentRequirements }> {
  const target = await x402Target(chain);
  // A test may have moved the chain's clock ahead (evm_increaseTime): the window follows the later clock.
  const chainNow = (await chain.publicClient.getBlock({ blockTag: 'latest' })).timestamp;
  const clockNow = BigInt(Math.floor(Date.now() / 1000));
  const now = chainNow > clockNow ? chainNow : clockNow;
  const authorization = {
    from: payer.address,
    to: target.payTo,
    value,
    validAfter: window?.validAfter ?? now - 600n,
    validBefore: window?.validBefore ?? now + 90n, // within now + maxTimeoutSeconds (60) + the 60 s plainpay allows
    nonce: keccak256(toHex(`x402 test ${Math.random()}`)),
  };
  const signature = await payer.signTypedData({
    domain: { name: target.name, version: target.version, chainId: chain.chainId, verifyingContract: target.asset },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const requirements = {
    scheme: 'exact',
    network: caip2(chain.chainId),
    amount: value.toString(),
    asset: target.asset,
    payTo: target.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: target.name, version: target.version },
  };
  const wire = Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, v.toString()]));
  return {
    requirements,
    payload: { x402Version: 2, accepted: requirements, payload: { signature, authorization: wire } },
  };
}
