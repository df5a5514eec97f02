// Who may receive tokens: the one copy of the recipient rules. An address is compared without its
// case (EIP-55 casing is a checksum, not part of the address); the zero address burns what it is
// sent; the service's own contracts (the token, the batch contract) would swallow it. Every place
// that takes, queues or signs a recipient asks here: the tools' schemas, the transfer queue, the
// payout guardrail, the batch planner and the policy's recipient lists.

import { type Address, getAddress, isAddress, zeroAddress } from 'viem';

/** An address as recipients are compared: lower case. */
export function normaliseRecipient(address: string): string {
  return address.toLowerCase();
}

/** An amount or recipient that must never be sent. */
export class TransferRefusedError extends Error {
  override name = 'TransferRefusedError';
}

/** The zero address: tokens sent there are burned. Refused as a recipient everywhere. */
export function isBurnAddress(address: string): boolean {
  return normaliseRecipient(address) === zeroAddress;
}

/** A checksummed address, or TransferRefusedError. The zero address burns tokens: refused. */
export function checkRecipient(recipient: string): Address {
  if (typeof recipient !== 'string' || !isAddress(recipient, { strict: false })) {
    throw new TransferRefusedError('recipient must be a 0x EVM address (0x and 40 hex characters)');
  }
  const address = getAddress(recipient);
  if (isBurnAddress(address)) throw new TransferRefusedError('refusing to send to the zero address');
  return address;
}

/** Whether tokens sent to this address would land in one of the service's own contracts. */
export function isServiceContract(address: string, contracts: { tokenAddress: string; batchAddress: string }): boolean {
  const lower = normaliseRecipient(address);
  return lower === normaliseRecipient(contracts.tokenAddress) || lower === normaliseRecipient(contracts.batchAddress);
}
