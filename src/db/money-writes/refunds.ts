// A refund's writes: its creation (refund_payment) and the steps and outcome of sending it on its
// rail (record_refund_submission, record_refund_outcome). Only tools/ imports this
// (test/architecture.test.ts).

import type { Insertable, Updateable } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import type { RefundRow, RefundsTable } from '../tables/money.ts';

/** A new refund (refund_payment), in the run that posts its money. */
export async function insertRefund(db: Db, refund: Insertable<RefundsTable>): Promise<RefundRow> {
  return db.insertInto('refunds').values(refund).returningAll().executeTakeFirstOrThrow();
}

/** A refund's outcome (record_refund_outcome). */
export async function updateRefund(db: Db, id: string, changes: Updateable<RefundsTable>): Promise<void> {
  await db.updateTable('refunds').set(changes).where('id', '=', id).execute();
}

/** updateRefund, answering the refund as it is now. */
export async function updateRefundRow(db: Db, id: string, changes: Updateable<RefundsTable>): Promise<RefundRow> {
  return db.updateTable('refunds').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * A step of sending the caller's own refund (record_refund_submission), only while the refund is
 * as `only` says: `pending`, and for a send, last sent when the worker read it (a compare-and-set).
 * True when it was recorded.
 */
export async function recordRefundStep(
  db: Db,
  scope: ModeScope,
  id: string,
  changes: Updateable<RefundsTable>,
  only: { pending?: boolean; lastSent?: Date | null } = {},
): Promise<boolean> {
  let update = db
    .updateTable('refunds')
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .set(changes);
  if (only.pending) update = update.where('status', '=', 'pending');
  if (only.lastSent !== undefined) {
    const lastSent = only.lastSent;
    update = update.where((eb) =>
      lastSent === null ? eb('submitted_at', 'is', null) : eb('submitted_at', '=', lastSent),
    );
  }
  const updated = await update.executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}
