import { canTransition, type PaymentStatus } from '../../domain/payment-status.ts';
import type { Db, NewPayment, PaymentRow, PaymentsTable } from '../database.ts';
import type { Updateable } from 'kysely';
import { FIRST_PAGE, type Keyset, keysetOrder, keysetWhere } from '../pagination.ts';

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

/** A payment as its owner sees it: account and mode must match, else it does not exist. */
export async function findPayment(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  id: string,
): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .executeTakeFirst();
}

/** Public read by id alone (the id is unguessable): the checkout page and status polling. */
export async function findPaymentById(db: Db, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findPaymentByReference(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  reference: string,
): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('reference', '=', reference)
    .executeTakeFirst();
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

export interface PaymentListFilter {
  accountId: string;
  livemode: boolean;
  status?: PaymentStatus | undefined;
  reference?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
  /** Where the page starts and which way it runs (db/pagination.ts); the first page by default. */
  keyset?: Keyset | undefined;
  limit: number;
}

export async function listPayments(db: Db, f: PaymentListFilter): Promise<PaymentRow[]> {
  let query = db
    .selectFrom('payments')
    .selectAll()
    .where('account_id', '=', f.accountId)
    .where('livemode', '=', f.livemode);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.reference) query = query.where('reference', '=', f.reference);
  if (f.createdGte) query = query.where('created_at', '>=', f.createdGte);
  if (f.createdLte) query = query.where('created_at', '<=', f.createdLte);
  const keyset = f.keyset ?? FIRST_PAGE;
  const order = keysetOrder(keyset);
  return query.where(keysetWhere(keyset)).orderBy('created_at', order).orderBy('id', order).limit(f.limit).execute();
}
