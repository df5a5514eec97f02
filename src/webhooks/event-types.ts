// The closed catalogue of event types. Every writer of an event names one of these (insertEvent
// takes an EventType), and an account endpoint subscribes to a list of them or to "*", so a
// misspelt subscription is refused when it is made instead of silently never matching.

/** What each type announces, as the dashboard and the endpoint API describe it. */
const CATALOGUE = {
  'payment.paid': 'the payer paid; settlement follows at settlement_due_at',
  'payment.settled': 'the payment settled on-chain',
  'payment.settlement_reverted':
    'a reorg took the settlement transaction off the chain: the payment is settling again; payment.settled follows when it lands again',
  'payment.expired': "the payment's ttl passed without payment",
  'payment.refunded': 'a refund of the payment was made',
  'payment.late_success': 'a payer rail confirmed money after the attempt had ended; it goes back to the payer',
  'refund.failed': 'a payer rail refused or failed a refund; its share is back in the balance',
  'payout.settled': 'a payout settled on-chain',
  'payout.failed': 'a payout failed; the money is back in the balance',
  'payout.settlement_reverted':
    'a reorg took the payout transaction off the chain: the payout is queued again; payout.settled follows when it lands again',
  'action.confirmation_required': 'the policy held an action for approval',
  'action.approved': 'a held action was approved and ran',
  'action.rejected': 'a held action was rejected; nothing moved',
  'action.expired': 'a held action lapsed without a decision; nothing moved',
} as const;

export type EventType = keyof typeof CATALOGUE;

export const EVENT_TYPES = Object.keys(CATALOGUE) as [EventType, ...EventType[]];

/** The subscription to every type, present and future. */
export const ALL_EVENT_TYPES = '*';

export function describeEventType(type: EventType): string {
  return CATALOGUE[type];
}
