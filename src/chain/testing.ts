// Test helpers for code that runs against the devnet (ours and other folders' tests). Not used by the
// service itself.

import { type Address, getAddress, type Hex, keccak256, type TransactionReceipt } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { type ChainConnection, estimateFees } from './chain.ts';

/**
 * Signs (locally, explicit fields) and sends a call from any key, then waits for its receipt. Reverts
 * do not throw: the receipt's status says what happened, as it would on a real chain.
 */
export async function sendAs(
  conn: ChainConnection,
  privateKey: Hex,
  call: { to: Address; data: Hex; gas?: bigint; value?: bigint },
): Promise<TransactionReceipt> {
  const account = privateKeyToAccount(privateKey);
  const [nonce, fees] = await Promise.all([
    conn.publicClient.getTransactionCount({ address: account.address, blockTag: 'pending' }),
    estimateFees(conn),
  ]);
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: conn.chainId,
    nonce,
    to: call.to,
    data: call.data,
    value: call.value ?? 0n,
    // A fixed limit (not an estimate): estimating a call that reverts would throw before sending.
    gas: call.gas ?? 500_000n,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  await conn.publicClient.sendRawTransaction({ serializedTransaction: raw });
  return await conn.publicClient.waitForTransactionReceipt({ hash: keccak256(raw) });
}

/** `count` distinct addresses that have never been used, derived from a seed (reproducible). */
export function freshAddresses(seed: string, count: number): Address[] {
  return Array.from({ length: count }, (_, i) => {
    const h = keccak256(new TextEncoder().encode(`${seed}:${i}`));
    return getAddress(`0x${h.slice(26)}`);
  });
}
