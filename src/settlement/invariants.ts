// Settlement invariants, checked against the chain: the ledger's own checks, plus ledger = chain for
// the treasury, in-flight = the transfers not yet confirmed, and each transfer paid by at most one
// confirmed batch. Run by every settlement test and the benchmark; safe for an operator to run (it
// only reads). Exact when settlement is quiet; while batches are moving it accounts for batches that
// are paid on chain but not yet booked.

import type { Hex } from 'viem';
import { type ChainConnection, isBatchPaid, readTreasuryBalance } from '../chain/chain.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import {
  checkLedgerInvariants,
  getLedgerBalance,
  type LedgerInvariantReport,
  ledgerAccount,
} from '../ledger/ledger.ts';
import { openChainSession } from './chain-session.ts';
import {
  confirmedBatchesNotMatchingTransfers,
  sentBatchTotals,
  transfersInSeveralConfirmedBatches,
} from '../db/repositories/settlement-batches.ts';
import { openTransferTotal } from '../db/repositories/transfers.ts';

export interface SettlementInvariantReport extends LedgerInvariantReport {
  treasury: {
    account: string;
    ledger: bigint;
    chain: bigint;
    /** Sent batches already paid on chain whose confirmation is not booked yet. */
    paidNotBooked: bigint;
  };
  inFlight: { ledger: bigint; openTransfers: bigint };
}

export async function checkSettlementInvariants(
  env: ToolEnvironment,
  conn: ChainConnection,
): Promise<SettlementInvariantReport> {
  const { db } = env;
  const ledger = await checkLedgerInvariants(db);
  const problems = [...ledger.problems];
  const session = await openChainSession(env, conn);

  const sent = await sentBatchTotals(db, session.key);
  let paidNotBooked = 0n;
  for (const batch of sent) {
    if (await isBatchPaid(conn, batch.batch_key as Hex)) paidNotBooked += batch.total_minor;
  }
  const chainTreasury = await readTreasuryBalance(conn);
  const ledgerTreasury = await getLedgerBalance(db, session.treasury);
  if (ledgerTreasury - paidNotBooked !== chainTreasury) {
    problems.push(
      `treasury: ledger ${ledgerTreasury} (minus ${paidNotBooked} paid, not yet booked) != chain ${chainTreasury}`,
    );
  }

  const inFlightLedger = await getLedgerBalance(db, ledgerAccount.inFlight(session.asset));
  const openTransfers = await openTransferTotal(db, session.asset);
  if (inFlightLedger !== openTransfers) {
    problems.push(`in-flight: ledger ${inFlightLedger} != open transfers ${openTransfers}`);
  }

  for (const r of await transfersInSeveralConfirmedBatches(db))
    problems.push(`transfer ${r.transfer_id} is in ${r.n} confirmed batches`);

  for (const r of await confirmedBatchesNotMatchingTransfers(db))
    problems.push(`confirmed batch ${r.id} does not match its transfers`);

  return {
    ...ledger,
    ok: problems.length === 0,
    problems,
    treasury: { account: session.treasury.id, ledger: ledgerTreasury, chain: chainTreasury, paidNotBooked },
    inFlight: { ledger: inFlightLedger, openTransfers },
  };
}
