import { html, type SafeHtml } from '../checkout/html.ts';
import type { Db } from '../db/database.ts';
import { listPaymentSummaries } from '../db/repositories/payments.ts';
import { listPayoutSummaries } from '../db/repositories/payouts.ts';
import { isId } from '../domain/ids.ts';
import { currencyOf } from '../domain/present-payment.ts';
import { formatDisplay } from '../domain/money.ts';
import { badge, usdc } from './view.ts';

/**
 * The money objects an action touched, as they stand now: the payouts and payments whose ids
 * appear in its result (a payout, a split's legs, a refund's payment) or its object_id. Looked up
 * live, because the tx hash arrives later than the action: the settlement worker writes it to the
 * payout or payment when the transfer is confirmed on chain.
 */
export interface LinkedObject {
  kind: 'payout' | 'payment';
  id: string;
  status: string;
  amount: string;
  txHash: string | null;
}

/** Every payout and payment id found anywhere in these JSON values. */
export function collectMoneyIds(values: readonly unknown[]): { payouts: string[]; payments: string[] } {
  const payouts = new Set<string>();
  const payments = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 8) return;
    if (typeof value === 'string') {
      if (isId('po', value)) payouts.add(value);
      else if (isId('pay', value)) payments.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) visit(item, depth + 1);
    } else if (value !== null && typeof value === 'object') {
      for (const item of Object.values(value)) visit(item, depth + 1);
    }
  };
  for (const value of values) visit(value, 0);
  return { payouts: [...payouts], payments: [...payments] };
}

export async function loadLinkedObjects(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  values: readonly unknown[],
): Promise<Map<string, LinkedObject>> {
  const ids = collectMoneyIds(values);
  const found = new Map<string, LinkedObject>();
  for (const row of await listPayoutSummaries(db, scope, ids.payouts)) {
    found.set(row.id, {
      kind: 'payout',
      id: row.id,
      status: row.status,
      amount: usdc(row.amount_minor),
      txHash: row.tx_hash,
    });
  }
  for (const row of await listPaymentSummaries(db, scope, ids.payments)) {
    found.set(row.id, {
      kind: 'payment',
      id: row.id,
      status: row.status,
      amount: formatDisplay(row.amount_minor, currencyOf(row)),
      txHash: row.settlement_tx_hash,
    });
  }
  return found;
}

/** The objects among `values`, as a list: id (linked), status, amount and tx hash once settled. */
export function linkedList(linked: Map<string, LinkedObject>, values: readonly unknown[]): SafeHtml {
  const ids = collectMoneyIds(values);
  const items = [...ids.payouts, ...ids.payments].flatMap((id) => {
    const object = linked.get(id);
    if (!object) return [];
    return [
      html`<li class="linked" data-object-id="${object.id}"><a href="/dashboard/${object.kind}s/${object.id}">${object.id}</a> ${badge(object.status)} ${object.amount}${
        object.txHash
          ? html`<br>tx <code class="tx-hash">${object.txHash}</code>`
          : html` <span class="muted">(no transaction yet)</span>`
      }</li>`,
    ];
  });
  return items.length === 0 ? html`` : html`<ul class="linked-objects">${items}</ul>`;
}
