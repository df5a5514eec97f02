import { createPublicClient, custom, getAddress, http, numberToHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  batchIdFromKey,
  broadcastRawTransaction,
  ChainConfigError,
  type ChainConnection,
  connectChain,
  encodeBatchPayout,
  estimateBatchGas,
  estimateFees,
  readTokenBalance,
  readTreasuryBalance,
  signBatchTransaction,
} from './chain.ts';
import { batchPayoutAbi, plainUsdAbi } from './contracts/abis.ts';
import {
  DEV_ACCOUNTS,
  DEVNET_TREASURY,
  type Devnet,
  type DevnetRpcServer,
  startDevnet,
  startDevnetRpcServer,
} from './devnet.ts';
import { freshAddresses, sendAs } from './testing.ts';

describe('startDevnet', () => {
  let devnet: Devnet;
  beforeAll(async () => {
    const started = performance.now();
    devnet = await startDevnet();
    console.log(`startDevnet ready in ${Math.round(performance.now() - started)} ms`);
  });
  afterAll(async () => {
    await devnet?.close();
  });

  it('uses the documented dev accounts and deterministic contract addresses', () => {
    for (const { address, privateKey } of Object.values(DEV_ACCOUNTS)) {
      expect(privateKeyToAccount(privateKey).address).toBe(address);
    }
    // Deployer nonce 0 and 1: the addresses every Hardhat user knows.
    expect(devnet.tokenAddress).toBe('0x5FbDB2315678afecb367f032d93F642f64180aa3');
    expect(devnet.batchAddress).toBe('0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512');
    expect(devnet.chainId).toBe(31337);
  });

  it('serves an EIP-1193 provider that viem reads the deployed contracts through', async () => {
    const client = createPublicClient({ transport: custom(devnet.provider, { retryCount: 0 }) });
    expect(await client.getChainId()).toBe(31337);
    const read = client.readContract;
    expect(await read({ address: devnet.tokenAddress, abi: plainUsdAbi, functionName: 'symbol' })).toBe('pUSD');
    expect(await read({ address: devnet.tokenAddress, abi: plainUsdAbi, functionName: 'owner' })).toBe(
      DEV_ACCOUNTS.deployer.address,
    );
    expect(
      await read({
        address: devnet.tokenAddress,
        abi: plainUsdAbi,
        functionName: 'balanceOf',
        args: [devnet.batchAddress],
      }),
    ).toBe(DEVNET_TREASURY);
    expect(await read({ address: devnet.batchAddress, abi: batchPayoutAbi, functionName: 'relayer' })).toBe(
      devnet.relayer.address,
    );
    expect(await client.getBalance({ address: devnet.relayer.address })).toBeGreaterThan(10n ** 21n);
  });

  it('mines n blocks on demand, and holds transactions while automine is off', async () => {
    const client = createPublicClient({ transport: custom(devnet.provider, { retryCount: 0 }) });
    const before = await client.getBlockNumber({ cacheTime: 0 });
    await devnet.mine(3);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(before + 3n);

    await devnet.setAutomine(false);
    try {
      const account = privateKeyToAccount(DEV_ACCOUNTS.outsider.privateKey);
      const raw = await account.signTransaction({
        type: 'eip1559',
        chainId: devnet.chainId,
        nonce: await client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
        to: DEV_ACCOUNTS.deployer.address,
        value: 1n,
        gas: 21_000n,
        maxFeePerGas: 10n ** 10n,
        maxPriorityFeePerGas: 10n ** 9n,
      });
      const hash = await client.sendRawTransaction({ serializedTransaction: raw });
      expect((await client.getTransaction({ hash })).blockNumber).toBeNull();
      await devnet.mine(1);
      expect((await client.getTransactionReceipt({ hash })).status).toBe('success');
    } finally {
      await devnet.setAutomine(true);
    }
  });

  it('sets balances directly', async () => {
    const [someone] = freshAddresses('set-balance', 1);
    await devnet.setBalance(someone!, 12345n);
    const balance = await devnet.provider.request({ method: 'eth_getBalance', params: [someone, 'latest'] });
    expect(balance).toBe(numberToHex(12345n));
  });
});

describe('startDevnet options', () => {
  it('honours chainId, a custom relayer key and interval mining', async () => {
    const relayerKey = DEV_ACCOUNTS.outsider.privateKey;
    const devnet = await startDevnet({ chainId: 1337, relayerPrivateKey: relayerKey, blockIntervalMs: 20 });
    try {
      const client = createPublicClient({ transport: custom(devnet.provider, { retryCount: 0 }) });
      expect(await client.getChainId()).toBe(1337);
      expect(devnet.relayer.address).toBe(DEV_ACCOUNTS.outsider.address);
      expect(
        await client.readContract({ address: devnet.batchAddress, abi: batchPayoutAbi, functionName: 'relayer' }),
      ).toBe(DEV_ACCOUNTS.outsider.address);
      // Blocks keep coming with no transactions sent.
      const start = await client.getBlockNumber({ cacheTime: 0 });
      await vi.waitFor(
        async () => {
          expect(await client.getBlockNumber({ cacheTime: 0 })).toBeGreaterThan(start + 1n);
        },
        { timeout: 10_000, interval: 20 },
      );
    } finally {
      await devnet.close();
    }
  });

  it('rejects contract addresses without an rpcUrl and bad confirmation counts', async () => {
    await expect(connectChain({ confirmations: 1, tokenAddress: DEV_ACCOUNTS.deployer.address })).rejects.toThrow(
      ChainConfigError,
    );
    await expect(connectChain({ confirmations: 0 })).rejects.toThrow(/confirmations/);
  });
});

describe('startDevnetRpcServer + connectChain over HTTP', () => {
  let server: DevnetRpcServer;
  let conn: ChainConnection;
  beforeAll(async () => {
    const started = performance.now();
    server = await startDevnetRpcServer();
    console.log(`startDevnetRpcServer ready in ${Math.round(performance.now() - started)} ms at ${server.url}`);
    conn = await connectChain({
      rpcUrl: server.url,
      chainId: server.chainId,
      tokenAddress: server.tokenAddress,
      batchAddress: server.batchAddress,
      relayerPrivateKey: server.relayer.privateKey,
      confirmations: 2,
    });
  });
  afterAll(async () => {
    await conn?.close();
    await server?.close();
  });

  it('listens on loopback and answers a plain viem http client', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = createPublicClient({ transport: http(server.url) });
    expect(await client.getChainId()).toBe(31337);
    expect(
      await client.readContract({
        address: server.tokenAddress,
        abi: plainUsdAbi,
        functionName: 'balanceOf',
        args: [server.batchAddress],
      }),
    ).toBe(DEVNET_TREASURY);
  });

  it('connects, validates the contracts and exposes no devnet-only hooks', async () => {
    expect(conn.chainId).toBe(31337);
    expect(conn.tokenDecimals).toBe(6);
    expect(conn.confirmations).toBe(2);
    expect(conn.relayer.address).toBe(DEV_ACCOUNTS.relayer.address);
    expect(conn.mine).toBeUndefined();
    expect(await readTreasuryBalance(conn)).toBe(DEVNET_TREASURY);
  });

  it('pays a batch, lands a double broadcast once, and counts confirmations with mine()', async () => {
    const recipients = freshAddresses('http-batch', 3);
    const amounts = [1_000_000n, 2_500_000n, 3n];
    const batchId = batchIdFromKey('test:http-batch');
    const data = encodeBatchPayout({ token: conn.tokenAddress, recipients, amounts, batchId });
    const fees = await estimateFees(conn);
    const signed = await signBatchTransaction(conn, {
      nonce: await conn.publicClient.getTransactionCount({ address: conn.relayer.address, blockTag: 'pending' }),
      data,
      gas: await estimateBatchGas(conn, data),
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    expect((await broadcastRawTransaction(conn, signed.rawTransaction)).status).toBe('submitted');
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: signed.hash });
    expect(receipt.status).toBe('success');
    expect((await broadcastRawTransaction(conn, signed.rawTransaction)).status).toBe('already_mined');
    expect(await Promise.all(recipients.map((r) => readTokenBalance(conn, r)))).toEqual(amounts);

    await server.mine(1);
    const confirmed = await conn.publicClient.waitForTransactionReceipt({
      hash: signed.hash,
      confirmations: conn.confirmations,
    });
    expect(confirmed.blockNumber).toBe(receipt.blockNumber);
    expect(await conn.publicClient.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(receipt.blockNumber + 1n);

    // A re-used batch id fails at estimation over HTTP too (and promptly: no retry storm).
    await expect(estimateBatchGas(conn, data)).rejects.toThrow();
    const outsider = await sendAs(conn, DEV_ACCOUNTS.outsider.privateKey, {
      to: conn.batchAddress,
      data: encodeBatchPayout({
        token: conn.tokenAddress,
        recipients,
        amounts,
        batchId: batchIdFromKey('test:http-outsider'),
      }),
    });
    expect(outsider.status).toBe('reverted');
  });

  it('refuses a misconfigured connection with a message naming the setting', async () => {
    const base = {
      rpcUrl: server.url,
      tokenAddress: server.tokenAddress,
      batchAddress: server.batchAddress,
      relayerPrivateKey: server.relayer.privateKey,
      confirmations: 1,
    };
    await expect(connectChain({ ...base, chainId: 1 })).rejects.toThrow(/chainId is 1 in config but the node/);
    await expect(connectChain({ ...base, relayerPrivateKey: DEV_ACCOUNTS.outsider.privateKey })).rejects.toThrow(
      /accepts relayer/,
    );
    await expect(connectChain({ ...base, tokenAddress: server.batchAddress })).rejects.toThrow(/decimals\(\)/);
    await expect(connectChain({ ...base, tokenAddress: undefined })).rejects.toThrow(/tokenAddress is required/);
    await expect(connectChain({ ...base, relayerPrivateKey: undefined })).rejects.toThrow(/relayerPrivateKey/);
    // Lower-case addresses are accepted and checksummed.
    const lower = await connectChain({ ...base, tokenAddress: server.tokenAddress.toLowerCase() as `0x${string}` });
    expect(lower.tokenAddress).toBe(getAddress(server.tokenAddress));
    await lower.close();
  });
});
