// Behaviour of the two contracts beyond the happy payout path: ERC-20 semantics of PlainUSD and the
// owner-only controls of BatchPayout. Runs on its own embedded devnet.

import { type Address, encodeFunctionData, type Hex, parseEventLogs } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchIdFromKey,
  type ChainConnection,
  connectChain,
  encodeBatchPayout,
  readTokenBalance,
  readTreasuryBalance,
} from '../chain.ts';
import { DEV_ACCOUNTS } from '../devnet.ts';
import { freshAddresses, sendAs } from '../testing.ts';
import { batchPayoutAbi, plainUsdAbi } from './abis.ts';

let conn: ChainConnection;
const { deployer, relayer, outsider } = DEV_ACCOUNTS;

beforeAll(async () => {
  conn = await connectChain({ confirmations: 1 });
});
afterAll(async () => {
  await conn?.close();
});

const token = (data: Hex): { to: Address; data: Hex } => ({ to: conn.tokenAddress, data });
const batch = (data: Hex): { to: Address; data: Hex } => ({ to: conn.batchAddress, data });
const tokenCall = encodeFunctionData<typeof plainUsdAbi>;
const allowance = (owner: Address, spender: Address): Promise<bigint> =>
  conn.publicClient.readContract({
    address: conn.tokenAddress,
    abi: plainUsdAbi,
    functionName: 'allowance',
    args: [owner, spender],
  });

describe('PlainUSD', () => {
  it('lets only the owner mint, and minting raises the supply', async () => {
    const [to] = freshAddresses('mint', 1) as [Address];
    const mint = tokenCall({ abi: plainUsdAbi, functionName: 'mint', args: [to, 5_000_000n] });
    expect((await sendAs(conn, outsider.privateKey, token(mint))).status).toBe('reverted');
    expect(await readTokenBalance(conn, to)).toBe(0n);

    const supplyBefore = await conn.publicClient.readContract({
      address: conn.tokenAddress,
      abi: plainUsdAbi,
      functionName: 'totalSupply',
    });
    const receipt = await sendAs(conn, deployer.privateKey, token(mint));
    expect(receipt.status).toBe('success');
    expect(await readTokenBalance(conn, to)).toBe(5_000_000n);
    const supplyAfter = await conn.publicClient.readContract({
      address: conn.tokenAddress,
      abi: plainUsdAbi,
      functionName: 'totalSupply',
    });
    expect(supplyAfter - supplyBefore).toBe(5_000_000n);
    const [transfer] = parseEventLogs({ abi: plainUsdAbi, eventName: 'Transfer', logs: receipt.logs });
    expect(transfer?.args).toEqual({ from: '0x0000000000000000000000000000000000000000', to, value: 5_000_000n });
  });

  it('transfers, refuses overdrafts and the zero address', async () => {
    const mint = tokenCall({ abi: plainUsdAbi, functionName: 'mint', args: [outsider.address, 100n] });
    await sendAs(conn, deployer.privateKey, token(mint));
    const [to] = freshAddresses('transfer', 1) as [Address];
    const before = await readTokenBalance(conn, outsider.address);

    const over = tokenCall({ abi: plainUsdAbi, functionName: 'transfer', args: [to, before + 1n] });
    expect((await sendAs(conn, outsider.privateKey, token(over))).status).toBe('reverted');
    const zero = tokenCall({
      abi: plainUsdAbi,
      functionName: 'transfer',
      args: ['0x0000000000000000000000000000000000000000', 1n],
    });
    expect((await sendAs(conn, outsider.privateKey, token(zero))).status).toBe('reverted');

    const ok = tokenCall({ abi: plainUsdAbi, functionName: 'transfer', args: [to, 40n] });
    expect((await sendAs(conn, outsider.privateKey, token(ok))).status).toBe('success');
    expect(await readTokenBalance(conn, to)).toBe(40n);
    expect(await readTokenBalance(conn, outsider.address)).toBe(before - 40n);
  });

  it('spends allowances with transferFrom, and never decrements an unlimited one', async () => {
    const mint = tokenCall({ abi: plainUsdAbi, functionName: 'mint', args: [outsider.address, 1_000n] });
    await sendAs(conn, deployer.privateKey, token(mint));
    const [to] = freshAddresses('transferFrom', 1) as [Address];
    const spender = deployer;

    const approve = tokenCall({ abi: plainUsdAbi, functionName: 'approve', args: [spender.address, 300n] });
    expect((await sendAs(conn, outsider.privateKey, token(approve))).status).toBe('success');
    expect(await allowance(outsider.address, spender.address)).toBe(300n);

    const tooMuch = tokenCall({ abi: plainUsdAbi, functionName: 'transferFrom', args: [outsider.address, to, 301n] });
    expect((await sendAs(conn, spender.privateKey, token(tooMuch))).status).toBe('reverted');
    const part = tokenCall({ abi: plainUsdAbi, functionName: 'transferFrom', args: [outsider.address, to, 120n] });
    expect((await sendAs(conn, spender.privateKey, token(part))).status).toBe('success');
    expect(await allowance(outsider.address, spender.address)).toBe(180n);
    expect(await readTokenBalance(conn, to)).toBe(120n);

    const max = 2n ** 256n - 1n;
    const unlimited = tokenCall({ abi: plainUsdAbi, functionName: 'approve', args: [spender.address, max] });
    await sendAs(conn, outsider.privateKey, token(unlimited));
    expect((await sendAs(conn, spender.privateKey, token(part))).status).toBe('success');
    expect(await allowance(outsider.address, spender.address)).toBe(max);
  });
});

describe('BatchPayout owner controls', () => {
  it('only the owner can withdraw treasury funds', async () => {
    const [to] = freshAddresses('withdraw', 1) as [Address];
    const withdraw = encodeFunctionData({
      abi: batchPayoutAbi,
      functionName: 'withdraw',
      args: [conn.tokenAddress, to, 777n],
    });
    expect((await sendAs(conn, relayer.privateKey, batch(withdraw))).status).toBe('reverted');
    expect((await sendAs(conn, outsider.privateKey, batch(withdraw))).status).toBe('reverted');
    const treasury = await readTreasuryBalance(conn);
    expect((await sendAs(conn, deployer.privateKey, batch(withdraw))).status).toBe('success');
    expect(await readTokenBalance(conn, to)).toBe(777n);
    expect(await readTreasuryBalance(conn)).toBe(treasury - 777n);
  });

  it('refuses a payout of a token address that has no code', async () => {
    const [fake, to] = freshAddresses('no-code', 2) as [Address, Address];
    const batchId = batchIdFromKey('contracts:no-code');
    const data = encodeBatchPayout({ token: fake, recipients: [to], amounts: [1n], batchId });
    expect((await sendAs(conn, relayer.privateKey, batch(data))).status).toBe('reverted');
    // The id was not burned by the failed attempt.
    expect(
      await conn.publicClient.readContract({
        address: conn.batchAddress,
        abi: batchPayoutAbi,
        functionName: 'paid',
        args: [batchId],
      }),
    ).toBe(false);
  });

  it('reverts the whole batch when one transfer fails (treasury short)', async () => {
    const treasury = await readTreasuryBalance(conn);
    const [a, b] = freshAddresses('all-or-nothing', 2) as [Address, Address];
    const data = encodeBatchPayout({
      token: conn.tokenAddress,
      recipients: [a, b],
      amounts: [1n, treasury],
      batchId: batchIdFromKey('contracts:all-or-nothing'),
    });
    expect((await sendAs(conn, relayer.privateKey, batch(data))).status).toBe('reverted');
    expect(await readTokenBalance(conn, a)).toBe(0n);
    expect(await readTreasuryBalance(conn)).toBe(treasury);
  });

  it('only the owner can change the relayer, and the old relayer is then refused', async () => {
    const setRelayer = (to: Address): Hex =>
      encodeFunctionData({ abi: batchPayoutAbi, functionName: 'setRelayer', args: [to] });
    expect((await sendAs(conn, relayer.privateKey, batch(setRelayer(outsider.address)))).status).toBe('reverted');
    expect((await sendAs(conn, deployer.privateKey, batch(setRelayer(outsider.address)))).status).toBe('success');
    try {
      const [to] = freshAddresses('new-relayer', 1) as [Address];
      const pay = (key: string): Hex =>
        encodeBatchPayout({ token: conn.tokenAddress, recipients: [to], amounts: [9n], batchId: batchIdFromKey(key) });
      expect((await sendAs(conn, relayer.privateKey, batch(pay('contracts:old-relayer')))).status).toBe('reverted');
      expect((await sendAs(conn, outsider.privateKey, batch(pay('contracts:new-relayer')))).status).toBe('success');
      expect(await readTokenBalance(conn, to)).toBe(9n);
    } finally {
      await sendAs(conn, deployer.privateKey, batch(setRelayer(relayer.address)));
    }
  });
});
