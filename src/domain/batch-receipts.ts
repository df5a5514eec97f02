// What the chain said about a settlement batch's transaction, as the relayer reads it and the
// outcome tools take it: the relayer (src/settlement) and the system tools (tools/system) both use
// these, so they sit below both.

import type { Hex } from 'viem';

export interface BatchReceipt {
  /** The chain it was mined on: a hash alone names a transaction on one chain only. */
  chainKey: string;
  hash: Hex;
  blockNumber: bigint;
  /** The block's hash: a settlement is final only while this is still the chain's block at blockNumber. */
  blockHash: Hex;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
}

/** A BatchReceipt as JSON. */
export interface BatchReceiptFacts {
  chain_key: string;
  hash: string;
  block_number: string;
  block_hash: string;
  gas_used: string;
  effective_gas_price: string;
}

/** A receipt as the outcome tools take it (JSON: big numbers as decimal strings). */
export function receiptInput(receipt: BatchReceipt): BatchReceiptFacts {
  return {
    chain_key: receipt.chainKey,
    hash: receipt.hash,
    block_number: receipt.blockNumber.toString(),
    block_hash: receipt.blockHash,
    gas_used: receipt.gasUsed.toString(),
    effective_gas_price: receipt.effectiveGasPrice.toString(),
  };
}

export interface BatchFailure {
  reason: string;
  /** The transaction whose receipt shows the revert, if one was mined. */
  reverted?: BatchReceipt;
}
