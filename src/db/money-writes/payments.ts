// A payment's writes: its creation and its status changes, made only in a tool's run. Only tools/
// imports this (test/architecture.test.ts); reads of payments are src/db/repositories/payments.ts.

import { CompiledQuery, type Updateable, type UpdateResult } from 'kysely';
import { canTransition, type PaymentStatus } from '../../domain/payment-status.ts';
import type { Db, NewPayment, PaymentRow, PaymentsTable } from '../database.ts';
import type { CreationSettings } from '../repositories/payments.ts';

export async function insertPayment(db: Db, payment: NewPayment): Promise<PaymentRow | undefined> {
  // A repeated reference on the same account and mode is not an error here: the caller
  // compares the existing payment (see create_payment).
  return db
    .insertInto('payments')
    .values(payment)
    .onConflict((oc) =>
      oc.columns(['account_id', 'livemode', 'reference']).where('reference', 'is not', null).doNothing(),
    )
    .returningAll()
    .executeTakeFirst();
}

/** The insert's text per column list (one in practice: newPayment always writes every column). */
const insertWithSettingsTexts = new Map<string, string>();

/**
 * insertPayment as a statement to compose (the one-statement create, src/pipeline/execute-tool.ts), which writes the
 * row only while its account's settings are still `settings`, the ones it was made from: changed
 * settings, like a taken reference, write no row. On the hottest write path, so its text is built
 * once per column list (the query builder took a tenth of a request's CPU building and compiling
 * it each time), and it is the same text every time, so it is prepared once per connection.
 */
export function insertPaymentWithSettings(payment: NewPayment, settings: CreationSettings): CompiledQuery<PaymentRow> {
  const columns = Object.keys(payment) as Array<keyof NewPayment & string>;
  const shape = columns.join(',');
  let text = insertWithSettingsTexts.get(shape);
  if (text === undefined) {
    const n = columns.length;
    text =
      `insert into payments (${columns.map((column) => `"${column}"`).join(', ')}) ` +
      `select ${columns.map((column, i) => `$${i + 1} as "${column}"`).join(', ')} ` +
      'from accounts as a left join settlement_schedules as s ' +
      `on s.account_id = a.id and s.livemode = $${n + 1} ` +
      `where a.id = $${n + 2} and a.fee_bps = $${n + 3} ` +
      `and s.schedule is not distinct from $${n + 4} and s.threshold_minor is not distinct from $${n + 5} ` +
      'on conflict (account_id, livemode, reference) where reference is not null do nothing returning *';
    insertWithSettingsTexts.set(shape, text);
  }
  const parameters: unknown[] = columns.map((column) => payment[column]);
  parameters.push(payment.livemode, payment.account_id, settings.feeBps, settings.schedule, settings.thresholdMinor);
  return CompiledQuery.raw(text, parameters) as CompiledQuery<PaymentRow>;
}

/**
 * Compare-and-set status change: succeeds only if the payment is still in `from`. Returns the
 * updated row, or undefined when another writer moved it first. Refuses transitions the
 * state machine does not allow (a programming error, not a race).
 */
export async function transitionPayment(
  db: Db,
  id: string,
  from: PaymentStatus,
  to: PaymentStatus,
  changes: Omit<Updateable<PaymentsTable>, 'status' | 'id'> = {},
  at: Date = new Date(),
): Promise<PaymentRow | undefined> {
  if (!canTransition(from, to)) throw new Error(`Illegal payment transition ${from} → ${to}`);
  return db
    .updateTable('payments')
    .set({ ...changes, status: to, updated_at: at })
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Paid payments whose transfers were just queued (start_payment_settlements): paid → settling, due
 * when their transfer is (the window's end, or now). Only those still paid: the caller compares
 * the count with what it locked.
 */
export async function startSettling(db: Db, paymentIds: readonly string[], now: Date): Promise<UpdateResult> {
  return db
    .updateTable('payments')
    .set((eb) => ({
      status: 'settling',
      updated_at: now,
      // When its transfer is due: the window's end, or now for instant (and a reached threshold).
      settlement_due_at: eb.fn.coalesce(
        eb
          .selectFrom('transfers')
          .select('transfers.due_at')
          .where('transfers.kind', '=', 'payment_settlement')
          .whereRef('transfers.source_id', '=', 'payments.id'),
        eb.val(now),
      ),
    }))
    .where('id', 'in', paymentIds)
    .where('status', '=', 'paid')
    .executeTakeFirst();
}

/** A payment's chain facts recorded again, its status kept (a settlement a reorg undid landed again). */
export async function updatePaymentRow(
  db: Db,
  id: string,
  changes: Omit<Updateable<PaymentsTable>, 'status' | 'id'>,
): Promise<PaymentRow | undefined> {
  return db.updateTable('payments').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
}

/**
 * A payment that moved on since it settled keeps its status, but no longer names a settlement
 * transaction a reorg took off the chain (revert_settlement_batch). Undefined when it names another.
 */
export async function forgetSettlementTransaction(
  db: Db,
  id: string,
  txHash: string,
  at: Date,
): Promise<PaymentRow | undefined> {
  return db
    .updateTable('payments')
    .set({
      settlement_tx_hash: null,
      settlement_gas_used: null,
      settlement_gas_cost_wei: null,
      settled_at: null,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('settlement_tx_hash', '=', txHash)
    .returningAll()
    .executeTakeFirst();
}
