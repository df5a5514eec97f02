/**
 * The payment state machine, in one table (docs/api.md). Every status change in the code asks
 * this table and then writes with compare-and-set (`… where status = from`), so two workers can
 * never both move one payment.
 *
 *   pending ─payer submits→ processing ─rail confirms→ paid ─tx broadcast→ settling ─confirmed→ settled
 *   pending → paid directly for synchronous rails (the sandbox rail confirms at once)
 *   processing ─rail declines→ pending (the attempt is recorded)
 *   pending ─ttl elapses→ expired (a processing attempt completes first)
 *   paid/settled → settled into the custodial balance without a chain transfer
 *   settled → settling: a reorg took the settlement transaction off the chain; it is sent again
 *   settled / partially_refunded → partially_refunded | refunded
 *   refunded / partially_refunded → partially_refunded | settled: a provider refused a refund, which is undone
 */
export const PAYMENT_STATUSES = [
  'pending',
  'processing',
  'paid',
  'settling',
  'settled',
  'expired',
  'refunded',
  'partially_refunded',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

const TRANSITIONS: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  pending: ['processing', 'paid', 'expired'],
  processing: ['paid', 'pending'],
  paid: ['settling', 'settled'],
  settling: ['settled', 'paid'],
  settled: ['partially_refunded', 'refunded', 'settling'],
  partially_refunded: ['partially_refunded', 'refunded', 'settled'],
  expired: [],
  refunded: ['partially_refunded', 'settled'],
};

export function canTransition(from: PaymentStatus, to: PaymentStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Statuses in which the payer has paid (money was received). */
export function isPaidStatus(status: PaymentStatus): boolean {
  return (
    status === 'paid' ||
    status === 'settling' ||
    status === 'settled' ||
    status === 'refunded' ||
    status === 'partially_refunded'
  );
}

/** Statuses from which nothing more will happen. */
export function isFinalStatus(status: PaymentStatus): boolean {
  return TRANSITIONS[status].length === 0;
}
