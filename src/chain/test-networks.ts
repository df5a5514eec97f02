// Test-mode money is play money. It may become tokens on a chain only where tokens are play money
// too: the embedded devnet, a local development node, or a public test network. Everywhere else
// (any mainnet, and any chain this list does not know) test-mode payments settle into the test
// balance, and test-mode payouts and revenue shares are refused. An allowlist, not a list of
// mainnets: wrongly keeping test money off an unknown testnet costs a developer a retry with a
// known one; wrongly sending it on an unknown mainnet would pay real money for nothing.

/**
 * Local development nodes (Hardhat, Anvil: 31337; Ganache, geth --dev: 1337). Such a chain lives on
 * one machine and can be reset for good, so it is also the only kind `plainpay chain adopt
 * --old-chain-gone` may declare gone.
 */
export const LOCAL_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337]);

/**
 * Public test networks: Sepolia, Holesky, Hoodi, Base Sepolia, OP Sepolia, Arbitrum Sepolia,
 * Polygon Amoy, Celo Alfajores, Avalanche Fuji, BNB testnet, Linea Sepolia, Scroll Sepolia,
 * zkSync Sepolia, Gnosis Chiado.
 */
const PUBLIC_TESTNET_CHAIN_IDS = [
  11155111, 17000, 560048, 84532, 11155420, 421614, 80002, 44787, 43113, 97, 59141, 534351, 300, 10200,
] as const;

export const TEST_NETWORK_CHAIN_IDS: ReadonlySet<number> = new Set([...LOCAL_CHAIN_IDS, ...PUBLIC_TESTNET_CHAIN_IDS]);

/** The chain a decision is about: its id, and whether it is the in-process devnet (has `mine`). */
export interface TestMoneyChain {
  chainId: number;
  mine?: unknown;
}

/** Whether test-mode money may be sent as tokens on this chain. */
export function testMoneyMayMoveOn(chain: TestMoneyChain): boolean {
  return chain.mine !== undefined || TEST_NETWORK_CHAIN_IDS.has(chain.chainId);
}

/** The refusal, worded once for every place that gives it. */
export function testMoneyRefusal(chain: TestMoneyChain): string {
  return `test-mode money is only sent on a test network, and chain ${chain.chainId} is not one (see docs/settlement.md)`;
}
