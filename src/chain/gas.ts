// Gas measurement: what one plain ERC-20 transfer costs versus one recipient's share of a batch
// payout. Used by the chain tests (printed, never asserted) and by the benchmark.
//
// It spends real tokens and gas: a few units from the treasury and the relayer's ETH. Meant for the
// devnet or a testnet.

import { type Address, encodeFunctionData, getAddress, type Hex, keccak256, toHex } from 'viem';
import {
  type ChainConnection,
  encodeBatchPayout,
  estimateBatchGas,
  estimateFees,
  signBatchTransaction,
  signRelayerTransaction,
} from './chain.ts';
import { plainUsdAbi } from './contracts/abis.ts';

export interface GasMeasurement {
  /** Relayer → an address that never held the token (a new balance slot: the common payout case). */
  erc20TransferToFresh: bigint;
  /** Relayer → an address that already holds the token. */
  erc20TransferToExisting: bigint;
  /** Recipients in each measured batch. */
  batchRecipients: number;
  /** Whole batch transaction, all recipients fresh (includes the 21 000 base cost and calldata). */
  batchGasToFresh: bigint;
  /** batchGasToFresh / batchRecipients, rounded down. */
  perRecipientToFresh: bigint;
  /** The same recipients paid again (existing holders). */
  batchGasToExisting: bigint;
  perRecipientToExisting: bigint;
}

/**
 * Measures on the connected chain. Sends, in order: a 1-recipient batch that pays the relayer a few
 * token units, two plain transfers from the relayer (fresh, then existing recipient), and two batches
 * of `recipients` random fresh addresses (fresh, then again as existing holders).
 */
export async function measureGas(conn: ChainConnection, opts: { recipients?: number } = {}): Promise<GasMeasurement> {
  const count = opts.recipients ?? 100;
  if (!Number.isInteger(count) || count < 1) throw new Error(`recipients must be an integer >= 1, got ${count}`);
  // Random salt per run: recipients must be fresh even on a chain where measureGas ran before.
  const salt = toHex(crypto.getRandomValues(new Uint8Array(16)));
  const fresh = (i: number): Address =>
    getAddress(`0x${keccak256(`${salt}${i.toString(16).padStart(8, '0')}`).slice(26)}`);
  const batchRecipients = Array.from({ length: count }, (_, i) => fresh(i + 1));
  const single = fresh(0);

  let nonce = await conn.publicClient.getTransactionCount({ address: conn.relayer.address, blockTag: 'pending' });
  const fees = await estimateFees(conn);
  const send = async (signed: { rawTransaction: Hex; hash: Hex }): Promise<bigint> => {
    await conn.publicClient.sendRawTransaction({ serializedTransaction: signed.rawTransaction });
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: signed.hash });
    if (receipt.status !== 'success') throw new Error(`measureGas: transaction ${signed.hash} reverted`);
    return receipt.gasUsed;
  };
  const batch = async (recipients: Address[], amount: bigint, tag: string): Promise<bigint> => {
    const data = encodeBatchPayout({
      token: conn.tokenAddress,
      recipients,
      amounts: recipients.map(() => amount),
      batchId: keccak256(`${salt}${Buffer.from(tag).toString('hex')}`),
    });
    const gas = await estimateBatchGas(conn, data);
    return await send(await signBatchTransaction(conn, { nonce: nonce++, data, gas, ...feeFields(fees) }));
  };
  const transfer = async (to: Address, amount: bigint): Promise<bigint> => {
    const data = encodeFunctionData({ abi: plainUsdAbi, functionName: 'transfer', args: [to, amount] });
    const signed = await signRelayerTransaction(conn, {
      to: conn.tokenAddress,
      nonce: nonce++,
      data,
      gas: 100_000n,
      ...feeFields(fees),
    });
    return await send(signed);
  };

  // The relayer holds ETH, not tokens; pay it 10 units so it can make plain transfers. It keeps a
  // non-zero balance throughout, so both transfers touch the sender's slot the same way.
  await batch([conn.relayer.address], 10n, 'fund-relayer');
  const erc20TransferToFresh = await transfer(single, 1n);
  const erc20TransferToExisting = await transfer(single, 1n);
  const batchGasToFresh = await batch(batchRecipients, 1n, 'fresh');
  const batchGasToExisting = await batch(batchRecipients, 1n, 'existing');
  return {
    erc20TransferToFresh,
    erc20TransferToExisting,
    batchRecipients: count,
    batchGasToFresh,
    perRecipientToFresh: batchGasToFresh / BigInt(count),
    batchGasToExisting,
    perRecipientToExisting: batchGasToExisting / BigInt(count),
  };
}

function feeFields(fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }): {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
} {
  return { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
}
