// Reads of the transfer queue (transfers) for the settlement worker: its planner's, its invariants',
// and what its loop waits for (hasOnChainWork looks at the batches and authorizations in flight
// too). Every write to it is in src/db/money-writes/transfers.ts.

import { sql } from 'kysely';
import type { Db } from '../database.ts';
import type { TransferKind, TransferRow, TransferStatus } from '../tables/settlement.ts';

/** The instant transfers waiting for a batch, and whether a scheduled one is due. */
export interface QueuedTransferWindow {
  /** Instant transfers queued (no due_at). */
  n: number;
  /** Their distinct recipients. */
  recipients: number;
  /** The oldest of them has waited batchMaxWaitMs or longer. */
  overdue: boolean;
  /** None arrived in the last batchWindowMs. */
  quiet: boolean;
  /** A scheduled transfer's due_at has passed. */
  scheduled: boolean;
}

/**
 * The queue as the batch window sees it. Instant ages are measured on the database's clock, where
 * created_at is written; due_at against `now`, the runtime clock that computed it.
 */
export async function queuedTransferWindow(
  db: Db,
  now: Date,
  window: { batchWindowMs: number; batchMaxWaitMs: number },
): Promise<QueuedTransferWindow | undefined> {
  const { batchWindowMs, batchMaxWaitMs } = window;
  const stats = await sql<QueuedTransferWindow>`
    select count(*)::int as n,
           count(distinct lower(recipient))::int as recipients,
           coalesce(bool_or(created_at <= now() - (${batchMaxWaitMs}::int * interval '1 millisecond')), false) as overdue,
           coalesce(bool_and(created_at <= now() - (${batchWindowMs}::int * interval '1 millisecond')), false) as quiet,
           exists (select 1 from transfers w where w.status = 'queued' and w.due_at <= ${now}) as scheduled
      from transfers where status = 'queued' and due_at is null`.execute(db);
  return stats.rows[0];
}

/**
 * How many transfers wait in each of these statuses, and the oldest's age in seconds on the
 * database's clock (transfers are stamped by it: created_at default now()). The metrics' scrape.
 */
export function countTransfersWaiting(db: Db, statuses: readonly TransferStatus[]) {
  return db
    .selectFrom('transfers')
    .select((eb) => [
      'status',
      eb.fn.countAll().as('depth'),
      sql<string | number>`greatest(0, extract(epoch from now() - min(created_at)))`.as('oldest_seconds'),
    ])
    .where('status', 'in', statuses)
    .groupBy('status')
    .execute();
}

/** A transfer confirmed on chain, with its batch and, for a payment's settlement, the payment's currency. */
export interface ConfirmedTransfer {
  id: string;
  kind: TransferKind;
  source_id: string;
  account_id: string;
  livemode: boolean;
  amount_minor: bigint;
  payment_currency: string | null;
  batch_id: string;
  batch_key: string;
  chain_key: string | null;
  tx_hash: string | null;
  ephemeral: boolean | null;
}

/** The transfers confirmed in [from, to), by batch and id (the daily reconciliation's chain side). */
export async function listTransfersConfirmedIn(db: Db, window: { from: Date; to: Date }): Promise<ConfirmedTransfer[]> {
  const rows = await sql<ConfirmedTransfer>`
    select t.id, t.kind, t.source_id, t.account_id, t.livemode, t.amount_minor,
           p.currency as payment_currency, b.id as batch_id, b.batch_key, b.chain_key, b.tx_hash, c.ephemeral
      from transfers t
      join settlement_batches b on b.id = t.batch_id
      left join chains c on c.chain_key = b.chain_key
      left join payments p on t.kind = 'payment_settlement' and p.id = t.source_id
     where t.status = 'confirmed' and t.confirmed_at >= ${window.from} and t.confirmed_at < ${window.to}
     order by b.id, t.id`.execute(db);
  return rows.rows;
}

/**
 * Every due transfer, oldest first (instant ones and scheduled ones whose due_at passed), up to
 * `limit`, locked for the caller's transaction; rows another planner holds are skipped.
 */
export async function lockDueTransfers(trx: Db, now: Date, limit: number): Promise<TransferRow[]> {
  return trx
    .selectFrom('transfers')
    .selectAll()
    .where('status', '=', 'queued')
    .where((eb) => eb.or([eb('due_at', 'is', null), eb('due_at', '<=', now)]))
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/**
 * When the next scheduled transfer falls due (the earliest due_at still in the future or past), or
 * null when none waits. For the worker's loop: a worker that sleeps while idle should wake by then.
 */
export async function nextSettlementDueAt(db: Db): Promise<Date | null> {
  const row = await db
    .selectFrom('transfers')
    .select((eb) => eb.fn.min('due_at').as('due'))
    .where('status', '=', 'queued')
    .where('due_at', 'is not', null)
    .executeTakeFirst();
  return row?.due ?? null;
}

/** The amount of the transfers of `asset` not yet confirmed (queued, batched or sent): what the ledger holds in flight. */
export async function openTransferTotal(db: Db, asset: string): Promise<bigint> {
  const open = await sql<{ total: string }>`
    select coalesce(sum(amount_minor), 0)::text as total from transfers
     where asset = ${asset} and status in ('queued', 'batched', 'sent')`.execute(db);
  return BigInt(open.rows[0]?.total ?? '0');
}

/**
 * Whether the settlement worker has work on chain now: instant transfers queued, transfers batched
 * or sent, x402 authorizations recorded or submitted, and confirmed batches and authorizations not
 * final yet. Confirmed ones count only on the chain settlement signs for (a chain adopted away is
 * no longer watched), and batches also on in-process devnets (finalized at confirmation; an older
 * one's are closed out by the first turn). Transfers held by a schedule are not: see
 * nextSettlementDueAt.
 */
export async function hasOnChainWork(db: Db): Promise<boolean> {
  const row = await sql<{ active: boolean }>`
      select exists (select 1 from transfers where status in ('batched', 'sent'))
          or exists (select 1 from transfers where status = 'queued' and due_at is null)
          or exists (select 1 from x402_authorizations where status in ('recorded', 'submitted'))
          or exists (select 1 from x402_authorizations x
                      where x.status = 'confirmed' and x.finalized_at is null
                        and x.chain_key = (select s.chain_key from settlement_chain s where s.id = 'current'))
          or exists (select 1 from settlement_batches b
                      where b.status = 'confirmed' and b.finalized_at is null
                        and (b.chain_key = (select s.chain_key from settlement_chain s where s.id = 'current')
                             or exists (select 1 from chains c where c.chain_key = b.chain_key and c.ephemeral))) as active`.execute(
    db,
  );
  return row.rows[0]?.active === true;
}

/** The merchants (and modes) of some transfers, a row each (not distinct): by batch, or by transfer id. */
export async function listTransferOwners(
  db: Db,
  by: 'batch_id' | 'id',
  values: readonly string[],
): Promise<Pick<TransferRow, 'account_id' | 'livemode'>[]> {
  return db.selectFrom('transfers').select(['account_id', 'livemode']).where(by, 'in', values).execute();
}

/** Those of these transfers still queued, locked for the caller's transaction in id order. */
export async function lockQueuedTransfers(trx: Db, transferIds: readonly string[]): Promise<TransferRow[]> {
  return trx
    .selectFrom('transfers')
    .selectAll()
    .where('id', 'in', transferIds)
    .where('status', '=', 'queued')
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** A batch's transfers in these statuses, locked for the caller's transaction in id order. */
export async function lockBatchTransfers(
  trx: Db,
  batchId: string,
  statuses: readonly TransferStatus[],
): Promise<TransferRow[]> {
  return trx
    .selectFrom('transfers')
    .selectAll()
    .where('batch_id', '=', batchId)
    .where('status', 'in', statuses)
    .orderBy('id')
    .forUpdate()
    .execute();
}
