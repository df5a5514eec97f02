// The ledger's writes: postings and the accounts they touch, made only in a tool's run. Only tools/
// imports this (test/architecture.test.ts); the ledger's shapes, balances and invariants are
// src/ledger/ledger.ts.

import type { Db } from '../database.ts';
import {
  assertBalanced,
  DuplicatePostingError,
  InsufficientBalanceError,
  isConstraintViolation,
  type LedgerAccountRef,
  LedgerError,
  type LedgerPosting,
  normalSideOf,
} from '../../ledger/ledger.ts';

// pg allows 65 535 bind parameters per statement; entries take 4 each.
const INSERT_CHUNK = 2_000;

/**
 * Records postings in the caller's transaction. Balances change in account-id order, one UPDATE per
 * account for the whole call, so concurrent callers take row locks in the same order (no deadlock
 * between two postLedger calls) and hot accounts (in_flight, fees) are touched once.
 * Throws InsufficientBalanceError when an account would go negative (the transaction is then void)
 * and DuplicatePostingError when (kind, reference) was posted before.
 */
export async function postLedger(db: Db, postings: LedgerPosting | readonly LedgerPosting[]): Promise<void> {
  const list = (Array.isArray(postings) ? postings : [postings]) as readonly LedgerPosting[];
  const effective: LedgerPosting[] = [];
  for (const posting of list) {
    assertBalanced(posting);
    const entries = posting.entries.filter((e) => e.amount !== 0n);
    if (entries.length > 0) effective.push({ ...posting, entries });
  }
  if (effective.length === 0) return;

  const accounts = new Map<string, LedgerAccountRef>();
  const deltas = new Map<string, bigint>();
  for (const posting of effective) {
    for (const { account, side, amount } of posting.entries) {
      const known = accounts.get(account.id);
      if (known && (known.asset !== account.asset || known.kind !== account.kind)) {
        throw new LedgerError(`ledger account ${account.id} used with two different kinds or assets`);
      }
      accounts.set(account.id, account);
      const signed = side === 'debit' ? amount : -amount;
      const inNormalSide = normalSideOf(account.kind) === 'debit' ? signed : -signed;
      deltas.set(account.id, (deltas.get(account.id) ?? 0n) + inNormalSide);
    }
  }
  await ensureLedgerAccounts(db, [...accounts.values()]);

  let inserted: { id: bigint; kind: string; reference: string }[];
  try {
    inserted = await db
      .insertInto('ledger_postings')
      .values(effective.map((p) => ({ kind: p.kind, reference: p.reference, ...(p.at ? { created_at: p.at } : {}) })))
      .returning(['id', 'kind', 'reference'])
      .execute();
  } catch (error) {
    if (isConstraintViolation(error, 'ledger_postings_once')) {
      throw new DuplicatePostingError(`a posting of this kind was already recorded for this reference`, {
        cause: error,
      });
    }
    throw error;
  }
  const postingIds = new Map(inserted.map((row) => [`${row.kind}\u0000${row.reference}`, row.id]));
  const rows = effective.flatMap((posting) => {
    const postingId = postingIds.get(`${posting.kind}\u0000${posting.reference}`);
    if (postingId === undefined) throw new LedgerError(`posting ${posting.kind} ${posting.reference} was not stored`);
    return posting.entries.map((e) => ({
      posting_id: postingId,
      account_id: e.account.id,
      asset: e.account.asset,
      amount_minor: e.side === 'debit' ? e.amount : -e.amount,
    }));
  });
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await db
      .insertInto('ledger_entries')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .execute();
  }

  for (const id of [...deltas.keys()].sort()) {
    const delta = deltas.get(id)!;
    if (delta === 0n) continue;
    try {
      await db
        .updateTable('ledger_accounts')
        .set((eb) => ({ balance_minor: eb('balance_minor', '+', delta) }))
        .where('id', '=', id)
        .execute();
    } catch (error) {
      if (isConstraintViolation(error, 'ledger_balance_not_negative')) {
        throw new InsufficientBalanceError(`ledger account ${id} has too little to move ${-delta}`, { cause: error });
      }
      throw error;
    }
  }
}

/** Creates the named accounts if they do not exist yet (idempotent, in id order). */
export async function ensureLedgerAccounts(db: Db, accounts: readonly LedgerAccountRef[]): Promise<void> {
  const unique = [...new Map(accounts.map((a) => [a.id, a])).values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  if (unique.length === 0) return;
  await db
    .insertInto('ledger_accounts')
    .values(
      unique.map((a) => ({
        id: a.id,
        kind: a.kind,
        asset: a.asset,
        normal_side: normalSideOf(a.kind),
        account_id: a.accountId ?? null,
        livemode: a.livemode ?? null,
        chain_key: a.chainKey ?? null,
      })),
    )
    // No conflict target: ledger_accounts has two unique indexes (id, and id + asset), and ON
    // CONFLICT (id) lets a concurrent first insert of the same account fail on the other one.
    .onConflict((oc) => oc.doNothing())
    .execute();
}
