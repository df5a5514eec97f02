// The one interface the rest of the service uses to reach the chain, plus the pure building blocks the
// relayer needs (calldata, deterministic signing, idempotent broadcast, fee estimates).
//
// Two backends, one shape: with no rpcUrl the embedded devnet (devnet.ts) is started in-process; with
// an rpcUrl we talk JSON-RPC over HTTP to whatever node that is (a `hardhat node`, a testnet, mainnet).
//
// Signing never asks the node to fill anything in: the caller passes nonce, gas and fees, and the
// relayer's key signs locally. That keeps a signed transaction a pure function of its inputs, which is
// what exactly-once settlement (store the raw tx, re-broadcast after a crash) relies on. It also keeps
// viem away from eth_fillTransaction, which EDR answers with an error (STACK.md).

import {
  type Address,
  type Chain,
  createPublicClient,
  custom,
  defineChain,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  isAddress,
  isHex,
  keccak256,
  type LocalAccount,
  type PublicClient,
  stringToBytes,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { batchPayoutAbi, plainUsdAbi } from './contracts/abis.ts';

/** The settlement asset has 6 decimals (USDC-like); the service's currency table is built on that. */
export const SETTLEMENT_TOKEN_DECIMALS = 6;

export interface ChainConfig {
  /** JSON-RPC URL of a node. Absent: start the embedded devnet in this process. */
  rpcUrl?: string;
  /** Expected chain id; with rpcUrl it must match the node's (guards against a wrong URL). */
  chainId?: number;
  /** Settlement token (required with rpcUrl; the devnet deploys its own). */
  tokenAddress?: Address;
  /** BatchPayout contract (required with rpcUrl; the devnet deploys its own). */
  batchAddress?: Address;
  /** Relayer key (required with rpcUrl; on the devnet it defaults to Hardhat dev account #1). */
  relayerPrivateKey?: Hex;
  /**
   * Blocks that must contain a transaction (1 = mined) before a transfer counts as settled. Absent:
   * the safe default for the chain id (chainSafetyDepths).
   */
  confirmations?: number | undefined;
  /** Milliseconds one JSON-RPC request may take before it counts as failed (remote nodes). Default 5 000. */
  rpcTimeoutMs?: number;
  /**
   * Embedded devnet only: also mine a block every N ms, so confirmations above 1 keep progressing when
   * nothing else is sent. Without it, a quiet devnet produces no blocks.
   */
  devnetBlockIntervalMs?: number;
  /** How often viem polls for blocks/receipts. Default 20 ms for in-process and loopback nodes, else 1 s. */
  pollingIntervalMs?: number;
}

export interface ChainConnection {
  chainId: number;
  /** viem client for reads, receipts and block watching. */
  publicClient: PublicClient;
  /** The relayer signs locally (privateKeyToAccount); the node never holds the key. */
  relayer: { address: Address; account: LocalAccount };
  /** Settlement stablecoin. */
  tokenAddress: Address;
  /** BatchPayout contract; its token balance is the treasury. */
  batchAddress: Address;
  tokenDecimals: number;
  /** Depth at which a settlement counts as settled (config, or the chain's default). */
  confirmations: number;
  /**
   * Depth from which a confirmed settlement is final: until then the worker re-checks that its
   * block is still the chain's (reorgs). Never below confirmations.
   */
  finalityDepth: number;
  close(): Promise<void>;
  /** Embedded devnet only: mine `blocks` blocks now (for confirmation tests). */
  mine?(blocks: number): Promise<void>;
  /** Embedded devnet only: switch per-transaction mining off to keep transactions pending. */
  setAutomine?(enabled: boolean): Promise<void>;
}

/** A configuration problem found while connecting; the message names the setting. */
export class ChainConfigError extends Error {
  override name = 'ChainConfigError';
}

// ---------------------------------------------------------------------------------------------------
// Depths per chain

export interface ChainSafetyDepths {
  /** Blocks deep (1 = mined) before a settlement counts as settled and payment.settled goes out. */
  confirmations: number;
  /** Blocks deep from which the settlement is final: the reorg watch stops there. */
  finalityDepth: number;
}

/**
 * Defaults used when CONFIRMATIONS is not set, by chain id (docs/configuration.md, "Confirmation
 * depth"). Chosen so that a settlement announced as settled is very unlikely to be reorganised
 * away, and so that the watch runs until the chain's own notion of finality:
 * - Ethereum (PoS): reorgs deeper than a couple of blocks are very rare; finality is two epochs
 *   (64 blocks, ~13 min).
 * - OP-stack L2s (Optimism, Base, and Celo since it became an L2): the sequencer's unsafe head can
 *   be reorganised until the batch is posted to L1; 2 s blocks (Celo 1 s).
 * - Arbitrum One: ~0.25 s blocks, soft finality from the sequencer; hard finality follows L1.
 * - Polygon PoS: history of deep reorgs before milestones; conservative depths.
 * - Local devnets (31337 Hardhat/EDR and anvil, 1337 geth dev): 1 block, watched 32 deep so the
 *   chaos suite can reorganise them.
 */
const SAFETY_DEPTHS: Readonly<Record<number, ChainSafetyDepths & { name: string }>> = {
  1: { name: 'Ethereum mainnet', confirmations: 12, finalityDepth: 64 },
  11155111: { name: 'Sepolia', confirmations: 12, finalityDepth: 64 },
  17000: { name: 'Holesky', confirmations: 12, finalityDepth: 64 },
  10: { name: 'OP Mainnet', confirmations: 15, finalityDepth: 900 },
  11155420: { name: 'OP Sepolia', confirmations: 15, finalityDepth: 900 },
  8453: { name: 'Base', confirmations: 15, finalityDepth: 900 },
  84532: { name: 'Base Sepolia', confirmations: 15, finalityDepth: 900 },
  42161: { name: 'Arbitrum One', confirmations: 40, finalityDepth: 4_000 },
  421614: { name: 'Arbitrum Sepolia', confirmations: 40, finalityDepth: 4_000 },
  137: { name: 'Polygon PoS', confirmations: 64, finalityDepth: 256 },
  80002: { name: 'Polygon Amoy', confirmations: 64, finalityDepth: 256 },
  42220: { name: 'Celo', confirmations: 30, finalityDepth: 1_800 },
  11142220: { name: 'Celo Sepolia', confirmations: 30, finalityDepth: 1_800 },
  31337: { name: 'local devnet (Hardhat/anvil)', confirmations: 1, finalityDepth: 32 },
  1337: { name: 'local devnet (geth --dev)', confirmations: 1, finalityDepth: 32 },
};

/** Any other chain: as cautious as Ethereum mainnet, watched longer. */
const UNKNOWN_CHAIN_DEPTHS: ChainSafetyDepths = { confirmations: 12, finalityDepth: 128 };

/** The default depths for a chain id (known chains from the table above, else a cautious default). */
export function chainSafetyDepths(chainId: number): ChainSafetyDepths & { known: boolean } {
  const entry = SAFETY_DEPTHS[chainId];
  if (!entry) return { ...UNKNOWN_CHAIN_DEPTHS, known: false };
  return { confirmations: entry.confirmations, finalityDepth: entry.finalityDepth, known: true };
}

/** Depths for a connection: configured confirmations win; finality is never shallower than them. */
function resolveDepths(chainId: number, configured: number | undefined): ChainSafetyDepths {
  const defaults = chainSafetyDepths(chainId);
  const confirmations = configured ?? defaults.confirmations;
  return { confirmations, finalityDepth: Math.max(defaults.finalityDepth, confirmations) };
}

/** Starts the embedded devnet (no rpcUrl) or connects to a node, and checks the contracts answer. */
export async function connectChain(cfg: ChainConfig): Promise<ChainConnection> {
  if (cfg.confirmations !== undefined && (!Number.isInteger(cfg.confirmations) || cfg.confirmations < 1)) {
    throw new ChainConfigError(`confirmations must be an integer >= 1, got ${cfg.confirmations}`);
  }
  return cfg.rpcUrl === undefined ? await connectEmbedded(cfg) : await connectRemote(cfg, cfg.rpcUrl);
}

async function connectEmbedded(cfg: ChainConfig): Promise<ChainConnection> {
  if (cfg.tokenAddress !== undefined || cfg.batchAddress !== undefined) {
    throw new ChainConfigError(
      'tokenAddress/batchAddress are only valid with rpcUrl: the embedded devnet deploys its own contracts',
    );
  }
  // Imported here, not at the top: the devnet loads Hardhat, which a process that talks to a remote
  // node, or never reaches the chain (an API or checkout instance), has no use for at start.
  const { startDevnet } = await import('./devnet.ts');
  const devnet = await startDevnet({
    ...(cfg.chainId !== undefined ? { chainId: cfg.chainId } : {}),
    ...(cfg.relayerPrivateKey !== undefined ? { relayerPrivateKey: cfg.relayerPrivateKey } : {}),
    ...(cfg.devnetBlockIntervalMs !== undefined ? { blockIntervalMs: cfg.devnetBlockIntervalMs } : {}),
  });
  const chain = chainDefinition(devnet.chainId, 'plainpay devnet', 'http://127.0.0.1/in-process');
  const publicClient = createPublicClient({
    chain,
    // No retries: an in-process provider has no transient failures, and EDR reports a revert with
    // JSON-RPC code 3, which viem's custom() transport maps to UnknownRpcError (code -1) and would
    // otherwise retry three times with backoff (~1 s per reverting eth_call or estimateGas).
    transport: custom(devnet.provider, { retryCount: 0 }),
    pollingInterval: cfg.pollingIntervalMs ?? 20,
  });
  const account = privateKeyToAccount(devnet.relayer.privateKey);
  return {
    chainId: devnet.chainId,
    publicClient,
    relayer: { address: account.address, account },
    tokenAddress: devnet.tokenAddress,
    batchAddress: devnet.batchAddress,
    tokenDecimals: SETTLEMENT_TOKEN_DECIMALS,
    ...resolveDepths(devnet.chainId, cfg.confirmations),
    close: () => devnet.close(),
    mine: (blocks) => devnet.mine(blocks),
    setAutomine: (enabled) => devnet.setAutomine(enabled),
  };
}

async function connectRemote(cfg: ChainConfig, rpcUrl: string): Promise<ChainConnection> {
  const tokenAddress = requireAddress(cfg.tokenAddress, 'tokenAddress');
  const batchAddress = requireAddress(cfg.batchAddress, 'batchAddress');
  if (cfg.relayerPrivateKey === undefined || !isHex(cfg.relayerPrivateKey) || cfg.relayerPrivateKey.length !== 66) {
    throw new ChainConfigError('relayerPrivateKey is required with rpcUrl and must be 32 bytes of 0x-hex');
  }
  const account = privateKeyToAccount(cfg.relayerPrivateKey);
  const loopback = isLoopbackUrl(rpcUrl);
  const pollingInterval = cfg.pollingIntervalMs ?? (loopback ? 20 : 1_000);
  // Bounded: a node that stops answering (an RPC freeze) must fail a call, not hang the worker;
  // viem's default is 10 s per attempt, times its retries.
  const transport = http(rpcUrl, { timeout: cfg.rpcTimeoutMs ?? 5_000 });

  // Ask the node for its chain id before building the client, so the client carries the real chain.
  const probe = createPublicClient({ transport, pollingInterval });
  const chainId = await probe.getChainId();
  if (cfg.chainId !== undefined && cfg.chainId !== chainId) {
    throw new ChainConfigError(`chainId is ${cfg.chainId} in config but the node at rpcUrl reports ${chainId}`);
  }
  const publicClient = createPublicClient({
    chain: chainDefinition(chainId, `chain ${chainId}`, rpcUrl),
    transport,
    pollingInterval,
  });

  const decimals = await publicClient
    .readContract({ address: tokenAddress, abi: plainUsdAbi, functionName: 'decimals' })
    .catch((error: unknown) => {
      throw new ChainConfigError(`tokenAddress ${tokenAddress} does not answer decimals(): ${shortMessage(error)}`);
    });
  if (decimals !== SETTLEMENT_TOKEN_DECIMALS) {
    // Amounts are computed in 6-decimal minor units throughout the service; another scale would pay
    // the wrong amounts by orders of magnitude.
    throw new ChainConfigError(
      `tokenAddress ${tokenAddress} has ${decimals} decimals; the settlement token must have ${SETTLEMENT_TOKEN_DECIMALS}`,
    );
  }
  const batchRelayer = await publicClient
    .readContract({ address: batchAddress, abi: batchPayoutAbi, functionName: 'relayer' })
    .catch((error: unknown) => {
      throw new ChainConfigError(`batchAddress ${batchAddress} does not answer relayer(): ${shortMessage(error)}`);
    });
  if (getAddress(batchRelayer) !== account.address) {
    // Every payout would revert with NotRelayer; better to refuse to start.
    throw new ChainConfigError(
      `batch contract ${batchAddress} accepts relayer ${batchRelayer}, but relayerPrivateKey is for ${account.address}`,
    );
  }

  return {
    chainId,
    publicClient,
    relayer: { address: account.address, account },
    tokenAddress,
    batchAddress,
    tokenDecimals: decimals,
    ...resolveDepths(chainId, cfg.confirmations),
    // viem's HTTP transport holds no connections of its own to release.
    close: async () => {},
  };
}

function requireAddress(value: Address | undefined, name: string): Address {
  if (value === undefined || !isAddress(value, { strict: false })) {
    throw new ChainConfigError(`${name} is required with rpcUrl and must be a 0x-prefixed 20-byte address`);
  }
  return getAddress(value);
}

function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\./.test(host);
  } catch {
    throw new ChainConfigError(`rpcUrl is not a valid URL: ${url}`);
  }
}

function chainDefinition(id: number, name: string, rpcUrl: string): Chain {
  return defineChain({
    id,
    name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

function shortMessage(error: unknown): string {
  if (error && typeof error === 'object' && 'shortMessage' in error && typeof error.shortMessage === 'string') {
    return error.shortMessage;
  }
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------------
// Reads

/** Token balance (minor units, 6 decimals) of any address. */
export async function readTokenBalance(conn: ChainConnection, address: Address): Promise<bigint> {
  return await conn.publicClient.readContract({
    address: conn.tokenAddress,
    abi: plainUsdAbi,
    functionName: 'balanceOf',
    args: [address],
  });
}

/** The treasury: the batch contract's own token balance. */
export async function readTreasuryBalance(conn: ChainConnection): Promise<bigint> {
  return await readTokenBalance(conn, conn.batchAddress);
}

/**
 * Whether the batch contract has already paid `batchId`. After a crash this is the authoritative
 * answer to "did that batch land?", whichever transaction carried it.
 */
export async function isBatchPaid(conn: ChainConnection, batchId: Hex): Promise<boolean> {
  return await conn.publicClient.readContract({
    address: conn.batchAddress,
    abi: batchPayoutAbi,
    functionName: 'paid',
    args: [batchId],
  });
}

// ---------------------------------------------------------------------------------------------------
// Pure helpers for the relayer

export interface BatchPayoutInput {
  token: Address;
  recipients: readonly Address[];
  amounts: readonly bigint[];
  /** 32-byte id, unique per batch forever (see batchIdFromKey). */
  batchId: Hex;
}

/** A batch id derived from a stable key (e.g. the batch row's id): keccak256 of its UTF-8 bytes. */
export function batchIdFromKey(key: string): Hex {
  if (key.length === 0) throw new Error('batchIdFromKey: key must not be empty');
  return keccak256(stringToBytes(key));
}

/**
 * Calldata for BatchPayout.payout. Rejects what the contract would revert on (so a doomed transaction
 * is never signed) and zero amounts (always an upstream bug; the contract would pay them).
 */
export function encodeBatchPayout(input: BatchPayoutInput): Hex {
  const { token, recipients, amounts, batchId } = input;
  if (recipients.length !== amounts.length) {
    throw new Error(`encodeBatchPayout: ${recipients.length} recipients but ${amounts.length} amounts`);
  }
  if (recipients.length === 0) throw new Error('encodeBatchPayout: a batch needs at least one recipient');
  if (!isHex(batchId) || batchId.length !== 66 || BigInt(batchId) === 0n) {
    throw new Error('encodeBatchPayout: batchId must be a non-zero bytes32 hex string');
  }
  for (const [i, amount] of amounts.entries()) {
    if (amount <= 0n) throw new Error(`encodeBatchPayout: amounts[${i}] must be > 0, got ${amount}`);
  }
  for (const [i, recipient] of recipients.entries()) {
    if (!isAddress(recipient, { strict: false }))
      throw new Error(`encodeBatchPayout: recipients[${i}] is not an address`);
  }
  return encodeFunctionData({
    abi: batchPayoutAbi,
    functionName: 'payout',
    args: [token, recipients, amounts, batchId],
  });
}

export interface TransactionFields {
  nonce: number;
  data: Hex;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export interface SignedTransaction {
  rawTransaction: Hex;
  /** keccak256 of the raw transaction: the hash the chain will know it by. */
  hash: Hex;
}

/**
 * Signs an EIP-1559 call from the relayer to the batch contract. No network access: the same inputs
 * always give the same raw transaction and hash (RFC 6979 deterministic signatures), so a stored
 * transaction can be re-created or re-broadcast safely.
 */
export async function signBatchTransaction(conn: ChainConnection, tx: TransactionFields): Promise<SignedTransaction> {
  return await signRelayerTransaction(conn, { ...tx, to: conn.batchAddress });
}

/** Like signBatchTransaction, to any contract (used by measureGas for a plain token transfer). */
export async function signRelayerTransaction(
  conn: ChainConnection,
  tx: TransactionFields & { to: Address; value?: bigint },
): Promise<SignedTransaction> {
  if (!Number.isSafeInteger(tx.nonce) || tx.nonce < 0) {
    throw new Error(`nonce must be an integer >= 0, got ${tx.nonce}`);
  }
  if (tx.maxPriorityFeePerGas > tx.maxFeePerGas) {
    throw new Error('maxPriorityFeePerGas must not exceed maxFeePerGas');
  }
  const rawTransaction = await conn.relayer.account.signTransaction({
    type: 'eip1559',
    chainId: conn.chainId,
    nonce: tx.nonce,
    to: tx.to,
    data: tx.data,
    value: tx.value ?? 0n,
    gas: tx.gas,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
  });
  return { rawTransaction, hash: keccak256(rawTransaction) };
}

/**
 * What became of a broadcast. Every variant carries the transaction's hash (computed locally).
 * - `submitted`: the node accepted it just now.
 * - `already_known`: the node already had this exact transaction (pending, or it is already in a
 *   block but the node reported it as known); a duplicate broadcast, harmless.
 * - `already_mined`: this exact transaction is already in block `blockNumber`; the node refused the
 *   duplicate with "nonce too low".
 * - `nonce_consumed`: the nonce was used by a DIFFERENT transaction (e.g. a fee-bumped replacement
 *   with the same calldata), so this one can never land. The caller checks its sibling transactions
 *   for that nonce (or isBatchPaid) to learn what happened. A lagging load-balanced node can report
 *   this before the mined transaction is visible, so treat it as "look again", not "lost".
 */
export type BroadcastResult =
  | { status: 'submitted'; hash: Hex }
  | { status: 'already_known'; hash: Hex }
  | { status: 'already_mined'; hash: Hex; blockNumber: bigint }
  | { status: 'nonce_consumed'; hash: Hex };

/**
 * Why a broadcast failed. `unreachable` means we cannot tell whether the node got it: re-broadcasting
 * the same raw transaction later is always safe.
 */
export type BroadcastErrorKind =
  | 'replacement_underpriced'
  | 'fee_too_low'
  | 'insufficient_funds'
  | 'nonce_too_high'
  | 'rejected'
  | 'unreachable';

export class BroadcastError extends Error {
  override name = 'BroadcastError';
  constructor(
    readonly kind: BroadcastErrorKind,
    readonly hash: Hex,
    message: string,
    options?: { cause: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Sends a signed transaction. Safe to call any number of times with the same raw transaction: the
 * duplicate cases are results (see BroadcastResult), not errors; real failures throw BroadcastError.
 */
export async function broadcastRawTransaction(conn: ChainConnection, rawTransaction: Hex): Promise<BroadcastResult> {
  const hash = keccak256(rawTransaction);
  try {
    const returned = await conn.publicClient.sendRawTransaction({ serializedTransaction: rawTransaction });
    if (returned.toLowerCase() !== hash.toLowerCase()) {
      // Would mean the node decoded different bytes than we signed; never expected.
      throw new BroadcastError('rejected', hash, `node returned hash ${returned}, expected ${hash}`);
    }
    return { status: 'submitted', hash };
  } catch (error) {
    if (error instanceof BroadcastError) throw error;
    const text = errorText(error);
    if (ALREADY_KNOWN.test(text)) return { status: 'already_known', hash };
    if (NONCE_TOO_LOW.test(text)) {
      // "Nonce too low" alone does not say WHICH transaction used the nonce: look this one up.
      const known = await conn.publicClient.getTransaction({ hash }).catch(() => null);
      if (known?.blockNumber != null) return { status: 'already_mined', hash, blockNumber: known.blockNumber };
      if (known) return { status: 'already_known', hash };
      return { status: 'nonce_consumed', hash };
    }
    throw new BroadcastError(classify(text), hash, `broadcast of ${hash} failed: ${shortMessage(error)}`, {
      cause: error,
    });
  }
}

// Node error texts differ by client (geth, Nethermind, Erigon, Besu, Reth, EDR) and are not
// standardised; these cover the wordings in use. Matched against lower-cased text.
/** geth/erigon "already known", Besu/EDR "Known transaction", Nethermind "AlreadyKnown". */
const ALREADY_KNOWN = /already known|known transaction|alreadyknown|already imported|already in (the )?(mempool|pool)/;
/** geth/EDR "nonce too low", Nethermind "OldNonce", others "nonce has already been used". */
const NONCE_TOO_LOW = /nonce too low|oldnonce|nonce has already been used|nonce is too low/;
const ERROR_KINDS: [RegExp, BroadcastErrorKind][] = [
  [/replacement (transaction )?underpriced|replacement fee too low/, 'replacement_underpriced'],
  [/insufficient funds/, 'insufficient_funds'],
  [/nonce too high|nonce gap/, 'nonce_too_high'],
  [/underpriced|fee too low|less than (the )?block base fee|max fee per gas less than/, 'fee_too_low'],
  [/fetch failed|econnrefused|econnreset|timed? ?out|took too long|socket|http request failed/, 'unreachable'],
];

function classify(text: string): BroadcastErrorKind {
  return ERROR_KINDS.find(([pattern]) => pattern.test(text))?.[1] ?? 'rejected';
}

/** Every message and `details` along an error's cause chain, lower-cased, for pattern matching. */
function errorText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 10; depth += 1) {
    if (typeof current === 'object') {
      const e = current as { message?: unknown; details?: unknown; cause?: unknown };
      if (typeof e.message === 'string') parts.push(e.message);
      if (typeof e.details === 'string') parts.push(e.details);
      current = e.cause;
    } else {
      parts.push(String(current));
      current = undefined;
    }
  }
  return parts.join(' | ').toLowerCase();
}

export interface FeeEstimate {
  baseFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** 2 × base fee + tip: stays valid through several full blocks of base-fee increases (+12.5% each). */
  maxFeePerGas: bigint;
}

/** EIP-1559 fees for the next transaction; only what is used is paid, the rest of maxFee is a cap. */
export async function estimateFees(conn: ChainConnection): Promise<FeeEstimate> {
  const [block, tip] = await Promise.all([
    conn.publicClient.getBlock({ blockTag: 'latest' }),
    conn.publicClient.estimateMaxPriorityFeePerGas(),
  ]);
  const baseFeePerGas = block.baseFeePerGas ?? 0n;
  return { baseFeePerGas, maxPriorityFeePerGas: tip, maxFeePerGas: baseFeePerGas * 2n + tip };
}

/**
 * Gas limit for a payout call: the node's estimate from the relayer plus 20%. It is sent as a raw
 * eth_estimateGas (not viem's estimateGas with a local account, which would prepare a transaction).
 * Throws when the call would revert (e.g. the batch id is already paid), before anything is signed.
 */
export async function estimateBatchGas(conn: ChainConnection, data: Hex): Promise<bigint> {
  const estimate = await conn.publicClient.request({
    method: 'eth_estimateGas',
    params: [{ from: conn.relayer.address, to: conn.batchAddress, data }],
  });
  return (BigInt(estimate) * 120n) / 100n;
}
