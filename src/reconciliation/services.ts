import type { Kysely } from 'kysely';
import type { ChainConnection } from '../chain/chain.ts';
import type { Config } from '../config/config.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Database } from '../db/database.ts';
import type { ProviderRail } from '../db/tables/rails.ts';
import type { CollectionListingArgs } from '../payments/rails/rail.ts';
import type { openChainSession } from '../settlement/chain-session.ts';
import type { checkSettlementInvariants } from '../settlement/invariants.ts';

/**
 * What the settlement side is given when the reconciliation reads the chain through it: the chain
 * session (settlement/chain-session.ts) and the treasury check (settlement/invariants.ts) decide
 * (today both still take the whole runtime).
 */
export type SettlementReads = Parameters<typeof openChainSession>[0] & Parameters<typeof checkSettlementInvariants>[0];

/** What a provider's listing of what it collected is given (payments/rails/rail.ts decides). */
export type ProviderListingReads = CollectionListingArgs<ProviderRail>['runtime'];

/**
 * What the reconciliation uses: the database it reads, the clock, a logger for its alert, the
 * secret box that opens a collection account's credentials, the operator token (config) of its
 * routes, the chain, and what the settlement side and the rails it reads through are given. The
 * worker, the CLI and the API host hand in their Runtime, which is one.
 */
export interface ReconciliationServices extends SettlementReads, ProviderListingReads {
  config: Config;
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  secretBox: SecretBox;
  chain(): Promise<ChainConnection>;
}
