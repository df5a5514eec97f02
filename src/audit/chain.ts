import { createHash } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json.ts';
import type { Db } from '../db/database.ts';
import type { ActionLogRow } from '../db/tables/money.ts';

/**
 * One account's hash chain, read safely beside running writers. An account's appends hold its
 * head row's lock (action-log.ts), so within one account seq order is commit order: once a head
 * (last_seq, last_hash) is read, the account's rows up to last_seq are exactly the committed chain
 * it closes, and rows after it belong to appends that committed later. A reader therefore reads
 * the head first and walks only up to it.
 */
export const GENESIS_HASH = '0'.repeat(64);

/** A point of an account's chain: a row's seq and hash (genesis: 0 and GENESIS_HASH). */
export interface ChainPoint {
  seq: bigint;
  hash: string;
}

export const GENESIS: ChainPoint = { seq: 0n, hash: GENESIS_HASH };

export function entryHash(
  prevHash: string,
  row: {
    account_id: string;
    livemode: boolean;
    entry_type: string;
    run_id: string | null;
    action_id: string | null;
    created_at: Date;
  },
  payloadText: string,
): string {
  // An explicit field list: what is hashed must not depend on which columns a query selected.
  const material = canonicalJson({
    account_id: row.account_id,
    livemode: row.livemode,
    entry_type: row.entry_type,
    run_id: row.run_id,
    action_id: row.action_id,
    created_at: row.created_at.toISOString(),
    prev_hash: prevHash,
  });
  return createHash('sha256').update(material).update('\n').update(payloadText).digest('hex');
}

/** The account's head as committed now; undefined: the account has never locked its log. */
export async function readHead(db: Db, accountId: string): Promise<ChainPoint | undefined> {
  const head = await db
    .selectFrom('action_log_heads')
    .select(['last_seq', 'last_hash'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return head && { seq: head.last_seq, hash: head.last_hash };
}

export interface SegmentWalk {
  /** The last intact row reached (`from` when none). */
  tail: ChainPoint;
  rows: number;
  /** The first row whose hash or link is wrong; the walk stops there. */
  broken?: { row: ActionLogRow; reason: string };
}

const PAGE = 1000;

/**
 * Walks the account's rows after `from` through seq `through`, in seq order (the (account_id, seq)
 * index), checking each row's hash and its link to the row before; `visit` sees each intact row.
 */
export async function walkSegment(
  db: Db,
  accountId: string,
  from: ChainPoint,
  through: bigint,
  visit: (row: ActionLogRow) => void,
): Promise<SegmentWalk> {
  let tail = from;
  let rows = 0;
  while (tail.seq < through) {
    const page = await db
      .selectFrom('action_log')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('seq', '>', tail.seq)
      .where('seq', '<=', through)
      .orderBy('seq')
      .limit(PAGE)
      .execute();
    if (page.length === 0) break;
    for (const row of page) {
      rows++;
      const expected = entryHash(row.prev_hash, row, canonicalJson(row.payload ?? null));
      if (expected !== row.hash) {
        return { tail, rows, broken: { row, reason: 'its contents do not match its hash (the row was edited)' } };
      }
      if (row.prev_hash !== tail.hash) {
        return {
          tail,
          rows,
          broken: {
            row,
            reason: 'its link to the previous row of the account is broken (a row before it was changed or removed)',
          },
        };
      }
      tail = { seq: row.seq, hash: row.hash };
      visit(row);
    }
  }
  return { tail, rows };
}
