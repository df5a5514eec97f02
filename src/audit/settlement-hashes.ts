import type { Db } from '../db/database.ts';
import { isId } from '../domain/ids.ts';

/**
 * The transaction hash an action's view shows once its object settled: a payout's, a revenue
 * share's legs', a payment's settlement. Read at view time, because it arrives after the action,
 * from the settlement worker. It is not in the action log: the worker settles outside the
 * account's log lock, and taking that lock there would order it against the ledger rows both
 * ways (a deadlock with the money calls). So verification checks each shown hash against the
 * confirmed settlement batch that paid the object instead (audit/view-check.ts).
 */
export interface SettlementHash {
  /** The action's object: the payout, revenue share or payment. */
  objectId: string;
  /** Where the shown hash is stored. */
  table: 'payouts' | 'payments';
  rowId: string;
  txHash: string;
  /** The transaction of the confirmed batch whose transfer paid the row; null if none did. */
  batchTxHash: string | null;
}

/** The stored settlement hashes of these objects (other ids are ignored). */
export async function loadSettlementHashes(db: Db, objectIds: readonly (string | null)[]): Promise<SettlementHash[]> {
  const payouts = objectIds.filter((id): id is string => isId('po', id));
  const shares = objectIds.filter((id): id is string => isId('split', id));
  const payments = objectIds.filter((id): id is string => isId('pay', id));
  const found: SettlementHash[] = [];
  if (payouts.length > 0 || shares.length > 0) {
    const rows = await db
      .selectFrom('payouts as p')
      .leftJoin('transfers as t', (join) =>
        join
          .onRef('t.source_id', '=', 'p.id')
          .on('t.kind', 'in', ['payout', 'split_leg'])
          .on('t.status', '=', 'confirmed'),
      )
      .leftJoin('settlement_batches as b', 'b.id', 't.batch_id')
      .select(['p.id', 'p.revenue_share_id', 'p.tx_hash', 'b.tx_hash as batch_tx_hash'])
      .where((eb) =>
        eb.or([
          ...(payouts.length > 0 ? [eb('p.id', 'in', payouts)] : []),
          ...(shares.length > 0 ? [eb('p.revenue_share_id', 'in', shares)] : []),
        ]),
      )
      .where('p.tx_hash', 'is not', null)
      .orderBy('p.id')
      .execute();
    for (const row of rows) {
      found.push({
        objectId:
          row.revenue_share_id !== null && shares.includes(row.revenue_share_id) ? row.revenue_share_id : row.id,
        table: 'payouts',
        rowId: row.id,
        txHash: row.tx_hash!,
        batchTxHash: row.batch_tx_hash,
      });
    }
  }
  if (payments.length > 0) {
    const rows = await db
      .selectFrom('payments as p')
      .leftJoin('transfers as t', (join) =>
        join.onRef('t.source_id', '=', 'p.id').on('t.kind', '=', 'payment_settlement').on('t.status', '=', 'confirmed'),
      )
      .leftJoin('settlement_batches as b', 'b.id', 't.batch_id')
      .select(['p.id', 'p.settlement_tx_hash', 'b.tx_hash as batch_tx_hash'])
      .where('p.id', 'in', payments)
      .where('p.settlement_tx_hash', 'is not', null)
      .execute();
    for (const row of rows) {
      found.push({
        objectId: row.id,
        table: 'payments',
        rowId: row.id,
        txHash: row.settlement_tx_hash!,
        batchTxHash: row.batch_tx_hash,
      });
    }
  }
  return found;
}

/** The hash each object shows: its rows' distinct hashes (a revenue share's legs share a batch). */
export function shownHashes(hashes: readonly SettlementHash[]): Map<string, string> {
  const byObject = new Map<string, Set<string>>();
  for (const hash of hashes) {
    const set = byObject.get(hash.objectId) ?? new Set();
    set.add(hash.txHash);
    byObject.set(hash.objectId, set);
  }
  return new Map([...byObject].map(([id, set]) => [id, [...set].join(' ')]));
}
