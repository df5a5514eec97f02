/**
 * What a reconciliation can find (docs/reconciliation.md, "Each line"): a closed list, so that
 * /metrics reports every kind (at 0 too) and the documentation says what to do about each.
 */
export const LINE_KINDS = {
  provider_not_booked: 'A provider lists a payment as collected that the ledger did not book',
  booked_not_at_provider: 'The ledger booked a payment the provider does not list as collected',
  amount_differs: 'The provider collected another amount (or currency) than the ledger booked',
  credit_without_operator_collection: 'A merchant was credited for money no operator-owned collection account received',
  settlement_not_on_chain: 'A settlement recorded as confirmed has no successful transaction on chain',
  treasury_shortfall: 'The treasury holds less than it owes',
  treasury_ledger_differs: "The ledger's treasury and in-flight accounts differ from the chain",
  source_unavailable: 'A provider listing or the chain could not be read: what it would confirm is unconfirmed',
} as const;

export type LineKind = keyof typeof LINE_KINDS;

export const LINE_KIND_NAMES = Object.keys(LINE_KINDS) as LineKind[];

/** One difference, about one payment, transfer or provider row. Amounts in `currency`'s minor units. */
export interface ReconciliationLine {
  kind: LineKind;
  /** null: not one mode's (the treasury holds both). */
  livemode: boolean | null;
  currency: string;
  /** The merchant whose payment or transfer it is (its finance sees the line); null: the operator's alone. */
  account_id: string | null;
  payment_id: string | null;
  rail: string | null;
  collection_id: string | null;
  /** The provider's reference or receipt, or the settlement batch and its transaction. */
  reference: string | null;
  /** What the provider (or the chain) says. */
  source_amount_minor: bigint | null;
  /** What plainpay booked. */
  ledger_amount_minor: bigint | null;
  detail: string;
}

/** A line with the fields it does not use left null. */
export function line(
  kind: LineKind,
  fields: Partial<Omit<ReconciliationLine, 'kind' | 'detail' | 'currency'>> & { currency: string; detail: string },
): ReconciliationLine {
  return {
    kind,
    livemode: null,
    account_id: null,
    payment_id: null,
    rail: null,
    collection_id: null,
    reference: null,
    source_amount_minor: null,
    ledger_amount_minor: null,
    ...fields,
  };
}

/** The order lines are stored and shown in: by kind (as listed above), then mode, currency, payment, reference. */
export function compareLines(a: ReconciliationLine, b: ReconciliationLine): number {
  const text = (l: ReconciliationLine) =>
    [l.livemode === null ? '' : l.livemode ? 'live' : 'test', l.currency, l.payment_id ?? '', l.reference ?? ''].join(
      '\u0000',
    );
  const byKind = LINE_KIND_NAMES.indexOf(a.kind) - LINE_KIND_NAMES.indexOf(b.kind);
  return byKind !== 0 ? byKind : text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0;
}
