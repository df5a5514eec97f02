import type { Hex } from 'viem';
import { type ChainConnection, isBatchPaid } from '../chain/chain.ts';
import { testMoneyMayMoveOn } from '../chain/test-networks.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import { listTreasuryObligations } from '../db/repositories/ledger-accounts.ts';
import { type ConfirmedTransfer, listTransfersConfirmedIn } from '../db/repositories/transfers.ts';
import type { TransferKind } from '../db/tables/settlement.ts';
import { SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { type ChainSession, openChainSession } from '../settlement/chain-session.ts';
import { checkSettlementInvariants } from '../settlement/invariants.ts';
import { receiptOf } from '../settlement/relayer.ts';
import type { DayWindow } from './day.ts';
import { line, type ReconciliationLine } from './lines.ts';

/**
 * The last two sides of the reconciliation (docs/reconciliation.md): what plainpay settled on
 * chain that day (confirmed transfers, each checked against the chain), and the treasury's tokens
 * against everything it owes. Reads only.
 */

const USDC = SETTLEMENT_CURRENCY.code;
/** Long enough for a settlement batch under way to commit (its confirmation is one transaction). */
const RECHECK_AFTER_MS = 1000;

/** Confirmed transfers of the day, per mode, kind and (for a payment's settlement) the payment's currency. */
export interface SettlementTotals {
  livemode: boolean;
  kind: TransferKind;
  /** The settled payments' local currency; null for payouts and the other kinds. */
  payment_currency: string | null;
  count: number;
  /** USDC minor units, as a decimal string. */
  amount_minor: string;
}

/** The treasury against what it owes, on the chain this instance settles on. Amounts in USDC minor units. */
export interface TreasuryCover {
  chain_key: string;
  /** The treasury's token balance on chain. */
  held_minor: string;
  /** Batches already paid on chain whose confirmation is not booked yet (still owed in the ledger, no longer held). */
  paid_not_booked_minor: string;
  owed: { live: OwedByMode; test: OwedByMode };
  /** Test-mode money is paid from this treasury only on a devnet, a local node or a known test network. */
  test_counted: boolean;
  owed_minor: string;
  shortfall_minor: string;
  /** held / owed; null when nothing is owed. */
  cover_ratio: number | null;
}

interface OwedByMode {
  /** Custodial merchant balances. */
  balances_minor: string;
  /** Transfers queued, batched or sent, not yet confirmed. */
  transfers_minor: string;
  /** Paid payments the settlement worker has not taken yet: their credit is owed as soon as it does. */
  paid_unbooked_minor: string;
}

export interface ChainSide {
  lines: ReconciliationLine[];
  settlements: SettlementTotals[];
  /** null: not read (nothing owed and nothing settled that day; or the chain could not be read, a line says so). */
  treasury: TreasuryCover | null;
}

/**
 * Given a ToolEnvironment, what the settlement side's treasury check (checkSettlementInvariants)
 * and chain session, which it reads through, are given.
 */
export async function reconcileChain(services: ToolEnvironment, window: DayWindow): Promise<ChainSide> {
  const transfers = await listTransfersConfirmedIn(services.db, window);
  const settlements = totalsOf(transfers);
  const owed = await owedByMode(services.db);
  // Nothing settled that day and nothing owed: no reason to reach the chain (on the embedded
  // devnet, reaching it would start it in an instance that has never settled anything).
  if (transfers.length === 0 && [owed.live, owed.test].every((o) => Object.values(o).every((v) => v === '0'))) {
    return { lines: [], settlements, treasury: null };
  }
  let conn: ChainConnection;
  let session: ChainSession;
  try {
    conn = await services.chain();
    session = await openChainSession(services, conn);
  } catch (error) {
    const reason = `the chain could not be read: ${(error as Error).message}`;
    return { lines: unreadable(transfers, reason, true), settlements, treasury: null };
  }
  const lines = await checkOnChain(session, transfers);
  const treasury = await treasuryCover(services, conn, session, owed);
  lines.push(...treasury.lines);
  return { lines, settlements, treasury: treasury.cover };
}

function totalsOf(transfers: readonly ConfirmedTransfer[]): SettlementTotals[] {
  const totals = new Map<string, SettlementTotals>();
  for (const t of transfers) {
    const key = `${t.livemode}|${t.kind}|${t.payment_currency}`;
    const found = totals.get(key) ?? {
      livemode: t.livemode,
      kind: t.kind,
      payment_currency: t.payment_currency,
      count: 0,
      amount_minor: '0',
    };
    found.count += 1;
    found.amount_minor = (BigInt(found.amount_minor) + t.amount_minor).toString();
    totals.set(key, found);
  }
  return [...totals.values()];
}

/**
 * Each confirmed batch of the day has a successful receipt for the transaction it recorded, and
 * the contract says its batch id was paid. A batch on another chain than the one this instance
 * reads cannot be checked: on an embedded devnet, that chain ended with its process (its play
 * money with it), so it is left out; any other is a source that could not be read.
 */
async function checkOnChain(
  session: ChainSession,
  transfers: readonly ConfirmedTransfer[],
): Promise<ReconciliationLine[]> {
  const lines: ReconciliationLine[] = [];
  const batches = new Map<string, ConfirmedTransfer[]>();
  for (const t of transfers) batches.set(t.batch_id, [...(batches.get(t.batch_id) ?? []), t]);
  for (const [batchId, members] of batches) {
    const { chain_key: chainKey, tx_hash: txHash, batch_key: batchKey, ephemeral } = members[0]!;
    if (chainKey !== session.key) {
      if (ephemeral) continue;
      lines.push(
        ...unreadable(
          members,
          `batch ${batchId} is on chain ${chainKey}, not the one this instance reads (${session.key})`,
          false,
        ),
      );
      continue;
    }
    const receipt = txHash ? await receiptOf(session, txHash as Hex) : null;
    const paid = await isBatchPaid(session.conn, batchKey as Hex);
    if (receipt?.status === 'success' && paid) continue;
    const found = !txHash
      ? 'records no transaction'
      : !receipt
        ? `records ${txHash}, which the chain does not have`
        : receipt.status !== 'success'
          ? `records ${txHash}, which reverted`
          : `records ${txHash}, but the contract has not paid its batch id`;
    for (const t of members) {
      lines.push(
        line('settlement_not_on_chain', {
          ...about(t),
          reference: `${batchId} ${txHash ?? ''}`.trim(),
          ledger_amount_minor: t.amount_minor,
          source_amount_minor: paid ? t.amount_minor : 0n,
          detail: `${t.kind} ${t.source_id} is confirmed in batch ${batchId}, which ${found}`,
        }),
      );
    }
  }
  return lines;
}

/** The transfers a chain that could not be read would have confirmed; one line for the treasury too when it was not read. */
function unreadable(transfers: readonly ConfirmedTransfer[], reason: string, treasury: boolean): ReconciliationLine[] {
  const lines = transfers.map((t) =>
    line('source_unavailable', {
      ...about(t),
      reference: `${t.batch_id} ${t.tx_hash ?? ''}`.trim(),
      ledger_amount_minor: t.amount_minor,
      detail: `${t.kind} ${t.source_id} could not be checked on chain: ${reason}`,
    }),
  );
  if (treasury)
    lines.push(line('source_unavailable', { currency: USDC, detail: `the treasury could not be read: ${reason}` }));
  return lines;
}

function about(t: ConfirmedTransfer) {
  return {
    livemode: t.livemode,
    currency: USDC,
    account_id: t.account_id,
    payment_id: t.kind === 'payment_settlement' ? t.source_id : null,
  };
}

/**
 * The treasury's tokens against everything it owes: custodial merchant balances, transfers not
 * yet confirmed, and paid payments about to be credited. checkSettlementInvariants reads the chain
 * balance and the batches paid but not booked, and names any place ledger and chain disagree.
 */
async function treasuryCover(
  services: ToolEnvironment,
  conn: ChainConnection,
  session: ChainSession,
  owed: { live: OwedByMode; test: OwedByMode },
): Promise<{ cover: TreasuryCover; lines: ReconciliationLine[] }> {
  const invariants = await settledInvariants(services, conn);
  const testCounted = testMoneyMayMoveOn(conn);
  const sum = (o: OwedByMode) => BigInt(o.balances_minor) + BigInt(o.transfers_minor) + BigInt(o.paid_unbooked_minor);
  const held = invariants.treasury.chain;
  const owedMinor = sum(owed.live) + (testCounted ? sum(owed.test) : 0n) - invariants.treasury.paidNotBooked;
  const shortfall = owedMinor > held ? owedMinor - held : 0n;
  const cover: TreasuryCover = {
    chain_key: session.key,
    held_minor: held.toString(),
    paid_not_booked_minor: invariants.treasury.paidNotBooked.toString(),
    owed,
    test_counted: testCounted,
    owed_minor: owedMinor.toString(),
    shortfall_minor: shortfall.toString(),
    // Four decimals, from integers: a ratio is for reading and alerting, not for money.
    cover_ratio: owedMinor > 0n ? Number((held * 10_000n) / owedMinor) / 10_000 : null,
  };
  const lines = invariants.problems.map((problem) =>
    line('treasury_ledger_differs', { currency: USDC, reference: session.treasury.id, detail: problem }),
  );
  if (shortfall > 0n) {
    lines.push(
      line('treasury_shortfall', {
        currency: USDC,
        reference: session.treasury.id,
        source_amount_minor: held,
        ledger_amount_minor: owedMinor,
        detail: `the treasury holds ${held} and owes ${owedMinor} (${testCounted ? 'live and test' : 'live'} balances, open transfers, paid payments): ${shortfall} short`,
      }),
    );
  }
  return { cover, lines };
}

/**
 * checkSettlementInvariants reads the ledger, the transfers and the chain one after the other, so
 * a batch settling between two reads can make them disagree for a moment: a disagreement counts
 * only if a second check, a moment later, still finds one.
 */
async function settledInvariants(services: ToolEnvironment, conn: ChainConnection) {
  const first = await checkSettlementInvariants(services, conn);
  if (first.problems.length === 0) return first;
  await new Promise((resolve) => setTimeout(resolve, RECHECK_AFTER_MS));
  return checkSettlementInvariants(services, conn);
}

async function owedByMode(db: Db): Promise<{ live: OwedByMode; test: OwedByMode }> {
  const rows = await listTreasuryObligations(db, USDC);
  const mode = (livemode: boolean): OwedByMode => {
    const part = (name: keyof OwedByMode) => rows.find((r) => r.livemode === livemode && r.part === name)?.total ?? '0';
    return {
      balances_minor: part('balances_minor'),
      transfers_minor: part('transfers_minor'),
      paid_unbooked_minor: part('paid_unbooked_minor'),
    };
  };
  return { live: mode(true), test: mode(false) };
}
