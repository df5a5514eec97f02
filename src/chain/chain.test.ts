import {
  BaseError,
  decodeErrorResult,
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  type Hex,
  keccak256,
  parseEventLogs,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchIdFromKey,
  broadcastRawTransaction,
  type ChainConnection,
  connectChain,
  encodeBatchPayout,
  estimateBatchGas,
  estimateFees,
  isBatchPaid,
  readTokenBalance,
  readTreasuryBalance,
  signBatchTransaction,
} from './chain.ts';
import { batchPayoutAbi, plainUsdAbi } from './contracts/abis.ts';
import { DEV_ACCOUNTS, DEVNET_TREASURY } from './devnet.ts';
import { measureGas } from './gas.ts';
import { freshAddresses, sendAs } from './testing.ts';

let conn: ChainConnection;

beforeAll(async () => {
  const started = performance.now();
  conn = await connectChain({ confirmations: 1 });
  console.log(`embedded devnet ready in ${Math.round(performance.now() - started)} ms`);
});

afterAll(async () => {
  await conn?.close();
});

/** Signs a payout from the relayer with fresh nonce/fees and the node's gas estimate. */
async function signPayout(
  recipients: readonly Hex[],
  amounts: readonly bigint[],
  batchId: Hex,
): Promise<{ rawTransaction: Hex; hash: Hex; data: Hex }> {
  const data = encodeBatchPayout({ token: conn.tokenAddress, recipients, amounts, batchId });
  const [nonce, fees, gas] = await Promise.all([
    conn.publicClient.getTransactionCount({ address: conn.relayer.address, blockTag: 'pending' }),
    estimateFees(conn),
    estimateBatchGas(conn, data),
  ]);
  const signed = await signBatchTransaction(conn, {
    nonce,
    data,
    gas,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  return { ...signed, data };
}

/** The custom error an eth_call of `data` from `from` to the batch contract reverts with (undefined: no revert). */
async function revertName(from: Hex, data: Hex): Promise<string | undefined> {
  try {
    await conn.publicClient.call({ account: from, to: conn.batchAddress, data });
    return undefined;
  } catch (error) {
    // The revert data sits on the innermost error (RpcRequestError over HTTP, EDR's error in-process).
    const inner = error instanceof BaseError ? (error.walk() as { data?: unknown }) : undefined;
    if (typeof inner?.data === 'string' && inner.data.startsWith('0x')) {
      return decodeErrorResult({ abi: batchPayoutAbi, data: inner.data as Hex }).errorName;
    }
    throw error;
  }
}

describe('embedded devnet via connectChain', () => {
  it('deploys the token and the batch contract with the treasury in the batch contract', async () => {
    expect(await conn.publicClient.getCode({ address: conn.tokenAddress })).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(await conn.publicClient.getCode({ address: conn.batchAddress })).toMatch(/^0x[0-9a-f]{100,}$/);
    const read = conn.publicClient.readContract;
    expect(await read({ address: conn.tokenAddress, abi: plainUsdAbi, functionName: 'decimals' })).toBe(6);
    expect(conn.tokenDecimals).toBe(6);
    expect(await read({ address: conn.batchAddress, abi: batchPayoutAbi, functionName: 'relayer' })).toBe(
      conn.relayer.address,
    );
    expect(await read({ address: conn.batchAddress, abi: batchPayoutAbi, functionName: 'owner' })).toBe(
      DEV_ACCOUNTS.deployer.address,
    );
    expect(conn.relayer.address).toBe(DEV_ACCOUNTS.relayer.address);
    expect(await conn.publicClient.getBalance({ address: conn.relayer.address })).toBeGreaterThan(10n ** 18n);
    // Other tests in this file spend treasury; only check it was minted (total supply) and is still large.
    expect(await read({ address: conn.tokenAddress, abi: plainUsdAbi, functionName: 'totalSupply' })).toBe(
      DEVNET_TREASURY,
    );
    expect(await readTreasuryBalance(conn)).toBeGreaterThan(DEVNET_TREASURY / 2n);
  });

  it('pays 100 recipients the exact amounts in one batch, once', async () => {
    const recipients = freshAddresses('batch-100', 100);
    const amounts = recipients.map((_, i) => BigInt(i + 1) * 1_000_000n + BigInt(i)); // all different
    const total = amounts.reduce((a, b) => a + b, 0n);
    const batchId = batchIdFromKey('test:batch-100');
    const treasuryBefore = await readTreasuryBalance(conn);

    const signed = await signPayout(recipients, amounts, batchId);
    expect(await broadcastRawTransaction(conn, signed.rawTransaction)).toEqual({
      status: 'submitted',
      hash: signed.hash,
    });
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: signed.hash });
    expect(receipt.status).toBe('success');

    const balances = await Promise.all(recipients.map((r) => readTokenBalance(conn, r)));
    expect(balances).toEqual(amounts);
    expect(await readTreasuryBalance(conn)).toBe(treasuryBefore - total);
    expect(await isBatchPaid(conn, batchId)).toBe(true);

    const [paid] = parseEventLogs({ abi: batchPayoutAbi, eventName: 'BatchPaid', logs: receipt.logs });
    expect(paid?.args).toEqual({ batchId, count: 100n, total });
    const transfers = parseEventLogs({ abi: plainUsdAbi, eventName: 'Transfer', logs: receipt.logs });
    expect(transfers.map((t) => t.args.to)).toEqual(recipients);
  });

  it('refuses a payout from anyone but the relayer', async () => {
    const recipients = freshAddresses('outsider', 2);
    const batchId = batchIdFromKey('test:outsider');
    const data = encodeBatchPayout({ token: conn.tokenAddress, recipients, amounts: [5n, 6n], batchId });

    expect(await revertName(DEV_ACCOUNTS.outsider.address, data)).toBe('NotRelayer');
    // The owner is not the relayer either.
    expect(await revertName(DEV_ACCOUNTS.deployer.address, data)).toBe('NotRelayer');
    const receipt = await sendAs(conn, DEV_ACCOUNTS.outsider.privateKey, { to: conn.batchAddress, data });
    expect(receipt.status).toBe('reverted');
    expect(await readTokenBalance(conn, recipients[0]!)).toBe(0n);
    expect(await isBatchPaid(conn, batchId)).toBe(false);
    // The relayer itself may send the very same calldata.
    expect(await revertName(conn.relayer.address, data)).toBeUndefined();
  });

  it('refuses a batch id that was already paid, even with different recipients', async () => {
    const batchId = batchIdFromKey('test:reuse');
    const [a, b] = freshAddresses('reuse', 2) as [Hex, Hex];
    const first = await signPayout([a], [100n], batchId);
    expect((await broadcastRawTransaction(conn, first.rawTransaction)).status).toBe('submitted');
    expect((await conn.publicClient.waitForTransactionReceipt({ hash: first.hash })).status).toBe('success');

    const again = encodeBatchPayout({ token: conn.tokenAddress, recipients: [b], amounts: [100n], batchId });
    expect(await revertName(conn.relayer.address, again)).toBe('BatchAlreadyPaid');
    // The relayer's gas estimate fails before anything is signed...
    await expect(estimateBatchGas(conn, again)).rejects.toThrow();
    // ...and a transaction sent anyway is mined reverted and pays nothing.
    const receipt = await sendAs(conn, DEV_ACCOUNTS.relayer.privateKey, { to: conn.batchAddress, data: again });
    expect(receipt.status).toBe('reverted');
    expect(await readTokenBalance(conn, a)).toBe(100n);
    expect(await readTokenBalance(conn, b)).toBe(0n);
  });

  it('reverts on mismatched lengths, an empty batch and a zero batch id', async () => {
    const [a, b] = freshAddresses('lengths', 2) as [Hex, Hex];
    const raw = (recipients: Hex[], amounts: bigint[], batchId: Hex): Hex =>
      encodeFunctionData({
        abi: batchPayoutAbi,
        functionName: 'payout',
        args: [conn.tokenAddress, recipients, amounts, batchId],
      });
    const id = batchIdFromKey('test:lengths');
    expect(await revertName(conn.relayer.address, raw([a, b], [1n], id))).toBe('LengthMismatch');
    expect(await revertName(conn.relayer.address, raw([], [], id))).toBe('EmptyBatch');
    expect(await revertName(conn.relayer.address, raw([a], [1n], `0x${'00'.repeat(32)}`))).toBe('InvalidBatchId');
    // encodeBatchPayout refuses the same inputs before anything is signed.
    expect(() =>
      encodeBatchPayout({ token: conn.tokenAddress, recipients: [a, b], amounts: [1n], batchId: id }),
    ).toThrow(/2 recipients but 1 amounts/);
    expect(() => encodeBatchPayout({ token: conn.tokenAddress, recipients: [], amounts: [], batchId: id })).toThrow();
    expect(() => encodeBatchPayout({ token: conn.tokenAddress, recipients: [a], amounts: [0n], batchId: id })).toThrow(
      /must be > 0/,
    );
    expect(() =>
      encodeBatchPayout({ token: conn.tokenAddress, recipients: [a], amounts: [1n], batchId: `0x${'00'.repeat(32)}` }),
    ).toThrow(/non-zero bytes32/);
  });

  it('signs deterministically: the same fields give the same raw transaction and hash', async () => {
    const data = encodeBatchPayout({
      token: conn.tokenAddress,
      recipients: freshAddresses('determinism', 3),
      amounts: [1n, 2n, 3n],
      batchId: batchIdFromKey('test:determinism'),
    });
    const fields = {
      nonce: 7,
      data,
      gas: 300_000n,
      maxFeePerGas: 3_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    };
    const one = await signBatchTransaction(conn, fields);
    const two = await signBatchTransaction(conn, { ...fields });
    expect(two).toEqual(one);
    expect(one.hash).toBe(keccak256(one.rawTransaction));
    const bumped = await signBatchTransaction(conn, { ...fields, maxFeePerGas: 4_000_000_000n });
    expect(bumped.hash).not.toBe(one.hash);
    // Signing is offline: it did not use the nonce on chain.
    expect(
      await conn.publicClient.getTransactionCount({ address: conn.relayer.address, blockTag: 'pending' }),
    ).toBeLessThan(7);
  });

  it('a raw transaction broadcast twice lands once (automine: the duplicate reports already_mined)', async () => {
    const recipients = freshAddresses('twice', 2);
    const signed = await signPayout(recipients, [10n, 20n], batchIdFromKey('test:twice'));
    expect((await broadcastRawTransaction(conn, signed.rawTransaction)).status).toBe('submitted');
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: signed.hash });
    const second = await broadcastRawTransaction(conn, signed.rawTransaction);
    expect(second).toEqual({ status: 'already_mined', hash: signed.hash, blockNumber: receipt.blockNumber });
    expect(await readTokenBalance(conn, recipients[0]!)).toBe(10n);
    expect(await readTokenBalance(conn, recipients[1]!)).toBe(20n);
  });

  it('with a pending duplicate and a replaced nonce, broadcast reports already_known and nonce_consumed', async () => {
    await conn.setAutomine!(false);
    try {
      const [a] = freshAddresses('pending', 1) as [Hex];
      const batchId = batchIdFromKey('test:pending');
      const original = await signPayout([a], [7n], batchId);
      expect((await broadcastRawTransaction(conn, original.rawTransaction)).status).toBe('submitted');
      expect(await broadcastRawTransaction(conn, original.rawTransaction)).toEqual({
        status: 'already_known',
        hash: original.hash,
      });

      // A fee bump: same nonce, same calldata, higher fees, replaces the original in the pool.
      const tx = await conn.publicClient.getTransaction({ hash: original.hash });
      const bumped = await signBatchTransaction(conn, {
        nonce: tx.nonce,
        data: original.data,
        gas: tx.gas,
        maxFeePerGas: (tx.maxFeePerGas! * 3n) / 2n,
        maxPriorityFeePerGas: (tx.maxPriorityFeePerGas! * 3n) / 2n,
      });
      expect((await broadcastRawTransaction(conn, bumped.rawTransaction)).status).toBe('submitted');
      await conn.mine!(1);

      const bumpedReceipt = await conn.publicClient.getTransactionReceipt({ hash: bumped.hash });
      expect(bumpedReceipt.status).toBe('success');
      // The original can never land now; broadcasting it again says so instead of throwing.
      expect(await broadcastRawTransaction(conn, original.rawTransaction)).toEqual({
        status: 'nonce_consumed',
        hash: original.hash,
      });
      expect(await readTokenBalance(conn, a)).toBe(7n);
    } finally {
      await conn.setAutomine!(true);
    }
  });

  it('estimates EIP-1559 fees with room above the base fee', async () => {
    const fees = await estimateFees(conn);
    expect(fees.baseFeePerGas).toBeGreaterThan(0n);
    expect(fees.maxPriorityFeePerGas).toBeGreaterThan(0n);
    expect(fees.maxFeePerGas).toBe(fees.baseFeePerGas * 2n + fees.maxPriorityFeePerGas);
  });

  it('mines blocks on demand for confirmation counting', async () => {
    const before = await conn.publicClient.getBlockNumber({ cacheTime: 0 });
    await conn.mine!(5);
    expect(await conn.publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before + 5n);
  });

  it('measures gas: one plain transfer vs one recipient of a 100-recipient batch', async () => {
    const gas = await measureGas(conn, { recipients: 100 });
    console.log('gas measurement', gas);
    expect(gas.batchRecipients).toBe(100);
    expect(gas.perRecipientToFresh).toBe(gas.batchGasToFresh / 100n);
    // Paying a fresh address always creates a balance slot (20 000 gas) on top of the 21 000 base.
    expect(gas.erc20TransferToFresh).toBeGreaterThan(41_000n);
    expect(gas.erc20TransferToExisting).toBeLessThan(gas.erc20TransferToFresh);
    // The point of batching: the base cost is shared, so each recipient is cheaper than a transfer.
    expect(gas.perRecipientToFresh).toBeLessThan(gas.erc20TransferToFresh);
    expect(gas.perRecipientToExisting).toBeLessThan(gas.erc20TransferToExisting);
  });

  it('emits decodable BatchPaid events with the batch id indexed', async () => {
    const batchId = batchIdFromKey('test:event');
    const signed = await signPayout(freshAddresses('event', 1), [1n], batchId);
    await broadcastRawTransaction(conn, signed.rawTransaction);
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: signed.hash });
    const log = receipt.logs.find((l) => getAddress(l.address) === conn.batchAddress);
    expect(log?.topics[1]).toBe(batchId);
    const decoded = decodeEventLog({ abi: batchPayoutAbi, data: log!.data, topics: log!.topics });
    expect(decoded.eventName).toBe('BatchPaid');
  });
});
