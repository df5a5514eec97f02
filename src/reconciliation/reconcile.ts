import type { ReconciliationServices } from './services.ts';
import { reconcileChain, type SettlementTotals, type TreasuryCover } from './chain.ts';
import { type CollectionTotals, type ListingStatus, reconcileCollections } from './collections.ts';
import type { DayWindow } from './day.ts';
import { compareLines, type ReconciliationLine } from './lines.ts';

/**
 * The daily three-way reconciliation (docs/reconciliation.md), per mode, currency and UTC day:
 * (a) what the providers list as collected into the operator's collection accounts, (b) what the
 * ledger booked to collection, (c) what plainpay settled on chain, and (d) the treasury against
 * everything it owes. Every difference is a line. It only reads: no money moves, and a run's own
 * record is not a money row.
 */

/** The totals of each side, stored with the run: what the lines are the differences of. */
export interface ReconciliationSummary {
  day: string;
  collections: CollectionTotals[];
  listings: ListingStatus[];
  settlements: SettlementTotals[];
  treasury: TreasuryCover | null;
}

export interface ReconciliationReport {
  summary: ReconciliationSummary;
  lines: ReconciliationLine[];
}

/** Reconciles one day and returns what it found; stores nothing. */
export async function reconcileDay(services: ReconciliationServices, window: DayWindow): Promise<ReconciliationReport> {
  const collections = await reconcileCollections(services, window);
  const chain = await reconcileChain(services, window);
  return {
    summary: {
      day: window.day,
      collections: collections.totals,
      listings: collections.listings,
      settlements: chain.settlements,
      treasury: chain.treasury,
    },
    lines: [...collections.lines, ...chain.lines].sort(compareLines),
  };
}
