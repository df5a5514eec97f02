// The embedded chain: an in-process EVM (Hardhat 3's EDR, created from code with no config file) with
// the settlement token and the batch payout contract deployed at boot. This is what `npm start` uses
// when no CHAIN_RPC_URL is configured, and what tests use instead of a real node.
//
// Everything here is deterministic: the accounts are Hardhat's well-known default dev accounts, so the
// contracts always land at the same addresses (deployer nonce 0 → token, nonce 1 → batch contract).
// These keys are PUBLIC (printed by every `hardhat node`); they must never hold real value.

import { fileURLToPath } from 'node:url';
import { createHardhatRuntimeEnvironment } from 'hardhat/hre';
import {
  type Address,
  encodeDeployData,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  keccak256,
  type LocalAccount,
  numberToHex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { batchPayoutAbi, plainUsdAbi } from './contracts/abis.ts';
import { batchPayoutBytecode, plainUsdBytecode } from './contracts/bytecode.ts';

/**
 * Hardhat's default dev accounts #0..#2 (mnemonic "test test test test test test test test test test
 * test junk", path m/44'/60'/0'/0/i). Public knowledge: fine for a local devnet, fatal anywhere else.
 */
export const DEV_ACCOUNTS = {
  /** #0: deploys the contracts, owns them, and is the token's minter. */
  deployer: {
    address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  },
  /** #1: the relayer, the only account allowed to call BatchPayout.payout; pays all gas. */
  relayer: {
    address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  },
  /** #2: holds nothing special; handy as "someone else" in tests. */
  outsider: {
    address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    privateKey: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  },
} as const satisfies Record<string, { address: Address; privateKey: Hex }>;

/** Hardhat's default chain id; wallets and tools recognise it as a local chain. */
export const DEVNET_CHAIN_ID = 31337;

/** 10^12 whole tokens (6 decimals) minted to the batch contract: the devnet treasury. */
export const DEVNET_TREASURY = 10n ** 12n * 10n ** 6n;

/** ETH given to each dev account at genesis (10 000 ETH, Hardhat's default). */
const GENESIS_BALANCE = 10n ** 22n;

/** Generous fixed gas limits for the boot transactions (only gas used is charged). */
const DEPLOY_GAS = 3_000_000n;
const CALL_GAS = 200_000n;

/** The minimal EIP-1193 surface we use; both EDR's provider and viem's `custom()` speak it. */
export interface Eip1193Provider {
  request(args: { method: string; params?: readonly unknown[] | object }): Promise<unknown>;
}

export interface DevnetOptions {
  /** Chain id of the simulated chain. Default 31337. */
  chainId?: number;
  /** Relayer key; default Hardhat account #1. The batch contract is deployed with this relayer. */
  relayerPrivateKey?: Hex;
  /** Mine each transaction in its own block as it arrives. Default true. */
  automine?: boolean;
  /**
   * Also mine an (empty if need be) block every N ms, so confirmation counts keep rising on a quiet
   * chain the way they do on a real one. Default: off (blocks only come from transactions and mine()).
   */
  blockIntervalMs?: number;
  /**
   * Timestamp of the genesis block. Default: now. Two devnets started with different dates have
   * different genesis hashes (a "node restarted with a new chain" in the chaos suite).
   */
  initialDate?: Date;
}

/** What the boot deployment produced; identical for the in-process and the HTTP variant. */
export interface DevnetDeployment {
  chainId: number;
  tokenAddress: Address;
  batchAddress: Address;
  deployer: { address: Address; privateKey: Hex };
  relayer: { address: Address; privateKey: Hex };
  /** Token units (6 decimals) minted to the batch contract at boot. */
  treasury: bigint;
}

export interface Devnet extends DevnetDeployment {
  /** In-process EIP-1193 provider: pass it to viem's `custom()` transport. */
  provider: Eip1193Provider;
  /** Mines `blocks` blocks at once (for confirmation-count tests). */
  mine(blocks: number): Promise<void>;
  /** Turns per-transaction mining on or off (off: transactions wait in the mempool for mine()). */
  setAutomine(enabled: boolean): Promise<void>;
  /** Sets an account's ETH balance (wei) directly. */
  setBalance(address: Address, wei: bigint): Promise<void>;
  close(): Promise<void>;
}

export interface DevnetRpcServer extends DevnetDeployment {
  /** http://127.0.0.1:PORT — a JSON-RPC endpoint for viem's `http()` or any outside tool. */
  url: string;
  host: string;
  port: number;
  mine(blocks: number): Promise<void>;
  /** Any JSON-RPC call (evm_snapshot, evm_revert, … for reorg tests). */
  rpc(method: string, params?: readonly unknown[]): Promise<unknown>;
  setAutomine(enabled: boolean): Promise<void>;
  close(): Promise<void>;
}

const NETWORK_NAME = 'plainpayDevnet';

/** Builds the EDR network config; accounts are listed so the node knows their genesis balances. */
async function createDevnetRuntime(opts: DevnetOptions): Promise<{
  hre: Awaited<ReturnType<typeof createHardhatRuntimeEnvironment>>;
  chainId: number;
  relayerKey: Hex;
}> {
  const chainId = opts.chainId ?? DEVNET_CHAIN_ID;
  const relayerKey = opts.relayerPrivateKey ?? DEV_ACCOUNTS.relayer.privateKey;
  const keys = new Set<Hex>([DEV_ACCOUNTS.deployer.privateKey, relayerKey, DEV_ACCOUNTS.outsider.privateKey]);
  const hre = await createHardhatRuntimeEnvironment(
    {
      networks: {
        [NETWORK_NAME]: {
          type: 'edr-simulated',
          chainType: 'l1',
          chainId,
          accounts: [...keys].map((privateKey) => ({ privateKey, balance: GENESIS_BALANCE })),
          // Interval mining is switched on after the boot deployment (see applyMiningMode), so boot
          // never races a timer-mined block.
          mining: { auto: true },
          ...(opts.initialDate ? { initialDate: opts.initialDate } : {}),
          // A real node mines a reverting transaction and reports status 0 in its receipt. Hardhat's
          // default instead throws from eth_sendRawTransaction, which would make the relayer believe
          // the transaction was never broadcast. Calls (eth_call/estimateGas) still throw on revert,
          // as they do on real nodes.
          throwOnTransactionFailures: false,
          throwOnCallFailures: true,
        },
      },
    },
    {},
    // Hardhat looks for the nearest package.json from this path (default: the cwd, which fails when
    // the service is started from a directory outside any npm project). Our own folder always works.
    fileURLToPath(new URL('.', import.meta.url)),
  );
  return { hre, chainId, relayerKey };
}

type Rpc = (method: string, params?: readonly unknown[]) => Promise<unknown>;

function rpcOf(provider: Eip1193Provider): Rpc {
  return (method, params) => provider.request(params === undefined ? { method } : { method, params });
}

/**
 * Deploys PlainUSD and BatchPayout and mints the treasury, by signing raw transactions locally with
 * explicit nonce/gas/fees (no eth_fillTransaction, no node-side signing), so it works the same over
 * the in-process provider and over HTTP.
 */
async function deployContracts(rpc: Rpc, chainId: number, relayerKey: Hex): Promise<DevnetDeployment> {
  const deployer = privateKeyToAccount(DEV_ACCOUNTS.deployer.privateKey);
  const relayer = privateKeyToAccount(relayerKey);
  const startNonce = Number(BigInt((await rpc('eth_getTransactionCount', [deployer.address, 'pending'])) as Hex));
  const block = (await rpc('eth_getBlockByNumber', ['latest', false])) as { baseFeePerGas?: Hex };
  const baseFee = BigInt(block.baseFeePerGas ?? '0x0');
  const maxPriorityFeePerGas = 1_000_000_000n;
  const maxFeePerGas = baseFee * 2n + maxPriorityFeePerGas;

  const tokenAddress = getContractAddress({ from: deployer.address, nonce: BigInt(startNonce) });
  const batchAddress = getContractAddress({ from: deployer.address, nonce: BigInt(startNonce + 1) });

  const txs: { to: Address | null; data: Hex; gas: bigint }[] = [
    { to: null, data: encodeDeployData({ abi: plainUsdAbi, bytecode: plainUsdBytecode }), gas: DEPLOY_GAS },
    {
      to: null,
      data: encodeDeployData({ abi: batchPayoutAbi, bytecode: batchPayoutBytecode, args: [relayer.address] }),
      gas: DEPLOY_GAS,
    },
    {
      to: tokenAddress,
      data: encodeFunctionData({ abi: plainUsdAbi, functionName: 'mint', args: [batchAddress, DEVNET_TREASURY] }),
      gas: CALL_GAS,
    },
  ];

  const hashes: Hex[] = [];
  for (const [i, tx] of txs.entries()) {
    const raw = await signBootTx(deployer, {
      chainId,
      nonce: startNonce + i,
      to: tx.to,
      data: tx.data,
      gas: tx.gas,
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
    await rpc('eth_sendRawTransaction', [raw]);
    hashes.push(keccak256(raw));
  }
  // Boot runs with automine on, so every receipt exists by now; a failed deploy must stop the boot.
  for (const hash of hashes) {
    const receipt = (await rpc('eth_getTransactionReceipt', [hash])) as { status: Hex } | null;
    if (receipt?.status !== '0x1') throw new Error(`devnet boot transaction ${hash} failed or was not mined`);
  }
  return {
    chainId,
    tokenAddress,
    batchAddress,
    deployer: { address: deployer.address, privateKey: DEV_ACCOUNTS.deployer.privateKey },
    relayer: { address: relayer.address, privateKey: relayerKey },
    treasury: DEVNET_TREASURY,
  };
}

async function signBootTx(
  account: LocalAccount,
  tx: {
    chainId: number;
    nonce: number;
    to: Address | null;
    data: Hex;
    gas: bigint;
    maxFeePerGas: bigint;
    maxPriorityFeePerGas: bigint;
  },
): Promise<Hex> {
  return await account.signTransaction({ type: 'eip1559', ...tx });
}

/** Applies the requested mining mode once boot is done (boot itself always automines). */
async function applyMiningMode(rpc: Rpc, opts: DevnetOptions): Promise<void> {
  if (opts.automine === false) await rpc('evm_setAutomine', [false]);
  if (opts.blockIntervalMs !== undefined) {
    if (!Number.isInteger(opts.blockIntervalMs) || opts.blockIntervalMs <= 0) {
      throw new Error(`blockIntervalMs must be a positive integer, got ${opts.blockIntervalMs}`);
    }
    await rpc('evm_setIntervalMining', [opts.blockIntervalMs]);
  }
}

function mineWith(rpc: Rpc): (blocks: number) => Promise<void> {
  return async (blocks) => {
    if (!Number.isInteger(blocks) || blocks < 0) throw new Error(`mine(blocks): blocks must be an integer >= 0`);
    if (blocks === 0) return;
    // hardhat_mine mines N blocks in one call (EDR does not materialise each empty block).
    await rpc('hardhat_mine', [numberToHex(blocks)]);
  };
}

/**
 * Starts the embedded devnet in this process and deploys the contracts. Ready in well under a second
 * on the project's machines (EDR start ~0.3 s; the three boot transactions are milliseconds).
 */
export async function startDevnet(opts: DevnetOptions = {}): Promise<Devnet> {
  const { hre, chainId, relayerKey } = await createDevnetRuntime(opts);
  const connection = await hre.network.connect({ network: NETWORK_NAME, chainType: 'l1' });
  const provider: Eip1193Provider = connection.provider;
  const rpc = rpcOf(provider);
  let closed = false;
  try {
    const deployment = await deployContracts(rpc, chainId, relayerKey);
    await applyMiningMode(rpc, opts);
    return {
      ...deployment,
      provider,
      mine: mineWith(rpc),
      setAutomine: async (enabled) => {
        await rpc('evm_setAutomine', [enabled]);
      },
      setBalance: async (address, wei) => {
        await rpc('hardhat_setBalance', [address, numberToHex(wei)]);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        // Stops interval mining first so no timer keeps the process alive.
        await rpc('evm_setIntervalMining', [0]).catch(() => {});
        await connection.close();
      },
    };
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
}

export interface DevnetRpcServerOptions extends DevnetOptions {
  /** Interface to bind. Default 127.0.0.1 (never all interfaces: the dev keys are public). */
  host?: string;
  /** TCP port; default 0 (an ephemeral port chosen by the OS). */
  port?: number;
}

/**
 * Starts a devnet behind a JSON-RPC HTTP (and WebSocket) server, for tests and tools that need an
 * out-of-process node. It is a separate chain from any startDevnet() instance, deployed the same way
 * (same addresses). Hardhat's createServer opens its own EDR connection that it does not expose, so
 * the boot transactions go over HTTP like any client's would.
 */
export async function startDevnetRpcServer(opts: DevnetRpcServerOptions = {}): Promise<DevnetRpcServer> {
  const { hre, chainId, relayerKey } = await createDevnetRuntime(opts);
  const host = opts.host ?? '127.0.0.1';
  const server = await hre.network.createServer({ network: NETWORK_NAME, chainType: 'l1' }, host, opts.port ?? 0);
  const { port } = await server.listen();
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const rpc = httpRpc(url);
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await rpc('evm_setIntervalMining', [0]).catch(() => {});
    await server.close();
  };
  try {
    const deployment = await deployContracts(rpc, chainId, relayerKey);
    await applyMiningMode(rpc, opts);
    return {
      ...deployment,
      url,
      host,
      port,
      mine: mineWith(rpc),
      rpc,
      setAutomine: async (enabled) => {
        await rpc('evm_setAutomine', [enabled]);
      },
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** A bare JSON-RPC-over-HTTP caller for boot and the test helpers (no viem client needed). */
function httpRpc(url: string): Rpc {
  let id = 0;
  return async (method, params = []) => {
    id += 1;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    });
    const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
    if (body.error) throw new Error(`${method} failed (${body.error.code}): ${body.error.message}`);
    return body.result;
  };
}
