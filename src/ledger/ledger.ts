// The double-entry ledger. Every movement of value is a posting whose entries sum to zero per asset;
// an account's balance is the sum of its entries, kept materialised in ledger_accounts in the same
// transaction (checkLedgerInvariants proves the two agree). Amounts are bigint minor units of the
// entry's asset, never floats.
//
// Sign convention in storage: a debit is positive, a credit negative. Balances are shown in the
// account's normal side, so every balance a person reads is positive in the ordinary case:
//   debit-normal  (value held):        treasury, rail_clearing
//   credit-normal (owed, earned, put in): merchant, in_flight, fees, funding, fx
// The database refuses a negative balance on every kind except rail_clearing and fx, which stand
// for the outside world (migrations/003_settlement.sql, constraint ledger_balance_not_negative).

import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { findLedgerBalance } from '../db/repositories/ledger-accounts.ts';
import type { LedgerAccountKind, LedgerNormalSide } from '../db/tables/settlement.ts';
import { AppError } from '../core/errors.ts';
import { TransferRefusedError } from '../domain/recipients.ts';

/** A ledger account by name. Created on first use; its kind fixes its normal side. */
export interface LedgerAccountRef {
  readonly id: string;
  readonly kind: LedgerAccountKind;
  readonly asset: string;
  readonly accountId?: string;
  readonly livemode?: boolean;
  readonly chainKey?: string;
}

const NORMAL_SIDE: Readonly<Record<LedgerAccountKind, LedgerNormalSide>> = {
  treasury: 'debit',
  rail_clearing: 'debit',
  merchant: 'credit',
  in_flight: 'credit',
  fees: 'credit',
  funding: 'credit',
  fx: 'credit',
};

export function normalSideOf(kind: LedgerAccountKind): LedgerNormalSide {
  return NORMAL_SIDE[kind];
}

const mode = (livemode: boolean): string => (livemode ? 'live' : 'test');

/**
 * The chart of accounts. Ids are stable strings so postings read well in SQL too. Test-mode and
 * live-mode money never share an account where it is the merchant's or the service's (balances,
 * fees, rail, FX); the treasury, in-flight and funding accounts are physical and shared.
 */
export const ledgerAccount = {
  /** A merchant's custodial balance in one mode. */
  merchant(accountId: string, livemode: boolean, asset: string): LedgerAccountRef {
    return { id: `merchant:${accountId}:${mode(livemode)}:${asset}`, kind: 'merchant', asset, accountId, livemode };
  },
  /**
   * Tokens the service holds on one chain in one batch contract (the contract's token balance).
   * checkSettlementInvariants compares it with the chain.
   */
  treasury(chainKey: string, contract: string, asset: string): LedgerAccountRef {
    return { id: `treasury:${chainKey}:${contract.toLowerCase()}:${asset}`, kind: 'treasury', asset, chainKey };
  },
  /** Money promised to a recipient whose transfer is queued or on chain but not yet confirmed. */
  inFlight(asset: string): LedgerAccountRef {
    return { id: `in_flight:${asset}`, kind: 'in_flight', asset };
  },
  /**
   * What the operator put into one chain's treasury (its opening balance, later top-ups). One per
   * chain, like the treasury it balances: every start of the embedded devnet is a new chain with a
   * fresh 10^18-unit treasury, and one shared account summing them all left the int8 range after
   * nine restarts on one database ("bigint out of range" on every later funding).
   */
  funding(chainKey: string, asset: string): LedgerAccountRef {
    return { id: `funding:${chainKey}:${asset}`, kind: 'funding', asset };
  },
  /** The service's fee income in one mode. */
  fees(livemode: boolean, asset: string): LedgerAccountRef {
    return { id: `fees:${mode(livemode)}:${asset}`, kind: 'fees', asset, livemode };
  },
  /** Local currency received through the payer rail. Outside world: may go negative. */
  railClearing(livemode: boolean, asset: string): LedgerAccountRef {
    return { id: `rail_clearing:${mode(livemode)}:${asset}`, kind: 'rail_clearing', asset, livemode };
  },
  /** Currency-conversion (trading) account: one per asset, so each asset balances on its own. */
  fx(livemode: boolean, asset: string): LedgerAccountRef {
    return { id: `fx:${mode(livemode)}:${asset}`, kind: 'fx', asset, livemode };
  },
} as const;

export interface LedgerEntry {
  readonly account: LedgerAccountRef;
  readonly side: 'debit' | 'credit';
  /** Positive minor units of account.asset. A zero entry is dropped. */
  readonly amount: bigint;
}

export function debit(account: LedgerAccountRef, amount: bigint): LedgerEntry {
  return { account, side: 'debit', amount };
}

export function credit(account: LedgerAccountRef, amount: bigint): LedgerEntry {
  return { account, side: 'credit', amount };
}

export interface LedgerPosting {
  /** What happened, e.g. payment_received, transfer_confirmed. (kind, reference) is unique. */
  readonly kind: string;
  /** The object it is about: pay_…, tx_…, po_…. */
  readonly reference: string;
  readonly entries: readonly LedgerEntry[];
  readonly at?: Date;
}

export class LedgerError extends Error {
  override name = 'LedgerError';
}

/** A posting would take an account below zero; the database refused it and the transaction is void. */
export class InsufficientBalanceError extends LedgerError {
  override name = 'InsufficientBalanceError';
}

/** The same (kind, reference) was posted before: the caller tried to record one event twice. */
export class DuplicatePostingError extends LedgerError {
  override name = 'DuplicatePostingError';
}

/** Throws unless every amount is a positive integer and debits equal credits in each asset. */
export function assertBalanced(posting: LedgerPosting): void {
  const net = new Map<string, bigint>();
  for (const entry of posting.entries) {
    if (typeof entry.amount !== 'bigint' || entry.amount < 0n) {
      throw new LedgerError(`posting ${posting.kind} ${posting.reference}: amounts must be bigint >= 0`);
    }
    const signed = entry.side === 'debit' ? entry.amount : -entry.amount;
    net.set(entry.account.asset, (net.get(entry.account.asset) ?? 0n) + signed);
  }
  for (const [asset, sum] of net) {
    if (sum !== 0n) {
      throw new LedgerError(`posting ${posting.kind} ${posting.reference} does not balance in ${asset}: off by ${sum}`);
    }
  }
}

/** Balance in the account's normal side; 0 for an account never used. */
export async function getLedgerBalance(db: Db, account: LedgerAccountRef): Promise<bigint> {
  return (await findLedgerBalance(db, account.id)) ?? 0n;
}

export interface LedgerInvariantReport {
  ok: boolean;
  problems: string[];
  /** Per asset: total debits and credits over all entries (equal when the ledger balances). */
  assets: { asset: string; debits: bigint; credits: bigint }[];
  postings: number;
  entries: number;
}

/**
 * Checks, over the whole ledger: every posting sums to zero per asset; all entries together sum to
 * zero per asset; every materialised balance equals the sum of its entries; no account of a kind
 * that must stay non-negative is negative. Read-only; meant for tests, the benchmark and operators.
 */
export async function checkLedgerInvariants(db: Db): Promise<LedgerInvariantReport> {
  const problems: string[] = [];

  const assets = await sql<{ asset: string; debits: string; credits: string }>`
    select asset,
           coalesce(sum(amount_minor) filter (where amount_minor > 0), 0)::text as debits,
           coalesce(-sum(amount_minor) filter (where amount_minor < 0), 0)::text as credits
      from ledger_entries group by asset order by asset`.execute(db);
  const perAsset = assets.rows.map((r) => ({ asset: r.asset, debits: BigInt(r.debits), credits: BigInt(r.credits) }));
  for (const a of perAsset) {
    if (a.debits !== a.credits) problems.push(`${a.asset}: debits ${a.debits} != credits ${a.credits}`);
  }

  const unbalanced = await sql<{ posting_id: bigint; asset: string; net: string }>`
    select posting_id, asset, sum(amount_minor)::text as net from ledger_entries
     group by posting_id, asset having sum(amount_minor) <> 0 limit 20`.execute(db);
  for (const r of unbalanced.rows) problems.push(`posting ${r.posting_id} is off by ${r.net} ${r.asset}`);

  const drift = await sql<{ id: string; balance: string; derived: string }>`
    select a.id, a.balance_minor::text as balance,
           (case when a.normal_side = 'debit' then 1 else -1 end * coalesce(sum(e.amount_minor), 0))::text as derived
      from ledger_accounts a left join ledger_entries e on e.account_id = a.id
     group by a.id, a.normal_side, a.balance_minor
    having a.balance_minor <> case when a.normal_side = 'debit' then 1 else -1 end * coalesce(sum(e.amount_minor), 0)
     limit 20`.execute(db);
  for (const r of drift.rows) problems.push(`${r.id}: stored balance ${r.balance} but entries sum to ${r.derived}`);

  const negative = await sql<{ id: string; balance: string }>`
    select id, balance_minor::text as balance from ledger_accounts
     where balance_minor < 0 and kind not in ('rail_clearing', 'fx') limit 20`.execute(db);
  for (const r of negative.rows) problems.push(`${r.id} is negative: ${r.balance}`);

  const counts = await sql<{ postings: string; entries: string }>`
    select (select count(*) from ledger_postings)::text as postings,
           (select count(*) from ledger_entries)::text as entries`.execute(db);
  const c = counts.rows[0];
  return {
    ok: problems.length === 0,
    problems,
    assets: perAsset,
    postings: Number(c?.postings ?? 0),
    entries: Number(c?.entries ?? 0),
  };
}

/** Whether `error` (pg or PGlite) is a violation of the named constraint or unique index. */
export function isConstraintViolation(error: unknown, name: string): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth += 1) {
    const candidate = e as { constraint?: unknown; message?: unknown; cause?: unknown };
    if (candidate.constraint === name) return true;
    if (typeof candidate.message === 'string' && candidate.message.includes(`"${name}"`)) return true;
    e = candidate.cause;
  }
  return false;
}

/** Maps ledger and transfer refusals to the API's errors; anything else passes through. */
export function moneyError(error: unknown, recipientParam: string): unknown {
  if (error instanceof InsufficientBalanceError) {
    return new AppError(
      'insufficient_funds',
      'The balance is too low for this amount. Check it with GET /v1/balance.',
      {
        cause: error,
      },
    );
  }
  if (error instanceof TransferRefusedError) {
    return new AppError('invalid_request', `${recipientParam}: ${error.message}`, {
      param: recipientParam,
      cause: error,
    });
  }
  return error;
}
