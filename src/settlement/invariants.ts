// Settlement invariants, checked against the chain: the ledger's own checks, plus ledger = chain for
// the treasury, in-flight = the transfers not yet confirmed, and each transfer paid by at most one
// confirmed batch. Run by every settlement test and the benchmark; safe for an operator to run (it
// only reads). Exact when settlement is quiet; while batches are moving it accounts for batches that
// are paid on chain but not yet booked.

import { sql } from 'kysely';
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

  const sent = await db
    .selectFrom('settlement_batches')
    .select(['id', 'batch_key', 'total_minor'])
    .where('status', '=', 'sent')
    .where('chain_key', '=', session.key)
    .execute();
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
  const open = await sql<{ total: string }>`
    select coalesce(sum(amount_minor), 0)::text as total from transfers
     where asset = ${session.asset} and status in ('queued', 'batched', 'sent')`.execute(db);
  const openTransfers = BigInt(open.rows[0]?.total ?? '0');
  if (inFlightLedger !== openTransfers) {
    problems.push(`in-flight: ledger ${inFlightLedger} != open transfers ${openTransfers}`);
  }

  const twice = await sql<{ transfer_id: string; n: number }>`
    select bt.transfer_id, count(*)::int as n from settlement_batch_transfers bt
      join settlement_batches b on b.id = bt.batch_id
     where b.status = 'confirmed' group by bt.transfer_id having count(*) > 1 limit 20`.execute(db);
  for (const r of twice.rows) problems.push(`transfer ${r.transfer_id} is in ${r.n} confirmed batches`);

  const mismatched = await sql<{ id: string }>`
    select b.id from settlement_batches b
      join settlement_batch_transfers bt on bt.batch_id = b.id
      join transfers t on t.id = bt.transfer_id
     where b.status = 'confirmed'
     group by b.id, b.total_minor, b.transfer_count
    having b.total_minor <> sum(t.amount_minor) or b.transfer_count <> count(*)
       or bool_or(t.status <> 'confirmed' or t.batch_id <> b.id) limit 20`.execute(db);
  for (const r of mismatched.rows) problems.push(`confirmed batch ${r.id} does not match its transfers`);

  return {
    ...ledger,
    ok: problems.length === 0,
    problems,
    treasury: { account: session.treasury.id, ledger: ledgerTreasury, chain: chainTreasury, paidNotBooked },
    inFlight: { ledger: inFlightLedger, openTransfers },
  };
}
