// The scrape-time collectors at their edges: a database or a node that fails or never answers must
// not fail the scrape, and the chain is read at most once per cache period. The values read from a
// real database and devnet are tested end to end in test/metrics.test.ts.

import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import type { ChainConnection } from '../chain/chain.ts';
import { ManualClock } from '../core/clock.ts';
import { createLogger } from '../core/logger.ts';
import type { Database } from '../db/database.ts';
import { type CollectOptions, createServiceMetrics, type MetricSources } from './metrics.ts';

const RELAYER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** A database whose every query fails (`down`) or never answers (`hung`). */
function brokenDatabase(kind: 'down' | 'hung'): Kysely<Database> {
  const pool = {
    connect: () => (kind === 'down' ? Promise.reject(new Error('database is down')) : new Promise(() => {})),
    end: async () => {},
  } as unknown as PostgresPool;
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** A node that answers balance reads: 1.5 ether of gas, 2.5 tokens (6 decimals) in the treasury. */
function fakeChain(): ChainConnection {
  return {
    chainId: 31337,
    relayer: { address: RELAYER },
    tokenAddress: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    batchAddress: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    tokenDecimals: 6,
    confirmations: 1,
    publicClient: {
      getBalance: async () => 1_500_000_000_000_000_000n,
      readContract: async () => 2_500_000n,
    },
  } as unknown as ChainConnection;
}

function setup(chain: MetricSources['chain'], db: Kysely<Database>, options: Partial<CollectOptions> = {}) {
  const logger = createLogger('silent');
  const warn = vi.spyOn(logger, 'warn');
  const metrics = createServiceMetrics({ db, clock: new ManualClock(), logger, chain }, options);
  /** One scrape, as name → [labels, value] pairs. */
  const scrape = async () => {
    const families = await metrics.registry.getMetricsAsJSON();
    return (name: string, labels: Record<string, string> = {}): number | undefined =>
      families
        .find((family) => family.name === name)
        ?.values.find((sample) => Object.entries(labels).every(([key, value]) => String(sample.labels[key]) === value))
        ?.value;
  };
  return { scrape, warn };
}

describe('chain balances', () => {
  it('are the relayer gas in ether and the treasury in whole tokens', async () => {
    const { scrape } = setup(async () => fakeChain(), brokenDatabase('down'));
    const value = await scrape();
    expect(value('plainpay_relayer_gas_balance_ether')).toBe(1.5);
    expect(value('plainpay_treasury_balance_usdc')).toBe(2.5);
    expect(value('plainpay_metrics_collect_errors_total', { collector: 'chain' })).toBe(0);
  });

  it('are read from the node once per cache period, however often it is scraped', async () => {
    const cached = vi.fn(async () => fakeChain());
    const withCache = setup(cached, brokenDatabase('down'), { chainCacheMs: 3_600_000 });
    await withCache.scrape();
    await withCache.scrape();
    expect(cached).toHaveBeenCalledTimes(1);

    const uncached = vi.fn(async () => fakeChain());
    const withoutCache = setup(uncached, brokenDatabase('down'), { chainCacheMs: 0 });
    await withoutCache.scrape();
    await withoutCache.scrape();
    expect(uncached).toHaveBeenCalledTimes(2);
  });

  it.each([
    ['fails', () => Promise.reject(new Error('node unreachable'))],
    ['never answers', () => new Promise<ChainConnection>(() => {})],
  ])('read NaN and count an error when the node %s; the scrape still answers', async (_case, chain) => {
    const { scrape, warn } = setup(chain, brokenDatabase('down'), { chainTimeoutMs: 50 });
    const value = await scrape();
    expect(value('plainpay_relayer_gas_balance_ether')).toBeNaN();
    expect(value('plainpay_treasury_balance_usdc')).toBeNaN();
    expect(value('plainpay_metrics_collect_errors_total', { collector: 'chain' })).toBe(1);
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ collector: 'chain' }), 'metrics collection failed');

    // Not cached: the next scrape asks the node again, and counts again.
    expect((await scrape())('plainpay_metrics_collect_errors_total', { collector: 'chain' })).toBe(2);
  });
});

describe('database gauges', () => {
  it.each([
    ['fails', 'down'],
    ['never answers', 'hung'],
  ] as const)('read NaN and count one error per collector when the database %s', async (_case, kind) => {
    const { scrape } = setup(async () => fakeChain(), brokenDatabase(kind), { queryTimeoutMs: 50 });
    const value = await scrape();
    for (const collector of ['transfer_queue', 'webhook_queue', 'confirmations', 'reconciliation']) {
      expect(value('plainpay_metrics_collect_errors_total', { collector })).toBe(1);
    }
    expect(value('plainpay_transfer_queue_depth', { status: 'queued' })).toBeNaN();
    expect(value('plainpay_transfer_queue_oldest_age_seconds', { status: 'sent' })).toBeNaN();
    expect(value('plainpay_webhook_queue_depth', { state: 'due' })).toBeNaN();
    expect(value('plainpay_webhook_queue_oldest_age_seconds')).toBeNaN();
    expect(value('plainpay_confirmations_waiting')).toBeNaN();
    expect(value('plainpay_confirmations_oldest_waiting_age_seconds')).toBeNaN();
    expect(value('plainpay_reconciliation_differences', { kind: 'treasury_shortfall', mode: 'both' })).toBeNaN();
    expect(value('plainpay_treasury_cover_ratio')).toBeNaN();
    // The chain does not depend on the database.
    expect(value('plainpay_relayer_gas_balance_ether')).toBe(1.5);
  });
});
