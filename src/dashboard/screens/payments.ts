import type { FastifyInstance } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import { listPaymentAttempts, listRailEvents } from '../../db/repositories/payment-attempts.ts';
import type { PaymentRow } from '../../db/database.ts';
import { findPayment, listPaymentsPage } from '../../db/repositories/payments.ts';
import { listPaymentRefunds } from '../../db/repositories/refunds.ts';
import { refundActionRequired } from '../../refunds/refunds.ts';
import { formatDisplay } from '../../domain/money.ts';
import { PAYMENT_STATUSES, type PaymentStatus } from '../../domain/payment-status.ts';
import { checkoutUrl, currencyOf, presentPayment } from '../../domain/present-payment.ts';
import { type DashboardDeps, type DashboardServices, pageContext, sendPage, sessionOf } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { badge, json, maybe, pager, param, renderPage, screen, select, table, time, usdc } from '../view.ts';

const PAGE_SIZE = 50;

/** The mode's payments, newest first, filtered by status or reference. */
async function paymentsPage(services: DashboardServices, session: DashboardSession, query: unknown): Promise<SafeHtml> {
  const status = param(query, 'status');
  const reference = param(query, 'reference');
  const startingAfter = param(query, 'starting_after');
  if (status !== undefined && !PAYMENT_STATUSES.includes(status as PaymentStatus)) {
    throw new AppError('invalid_request', `status must be one of ${PAYMENT_STATUSES.join(', ')}.`, {
      param: 'status',
    });
  }
  const { data: shown, has_more } = await listPaymentsPage(
    services.db,
    session,
    { status: status as PaymentStatus | undefined, reference },
    { limit: PAGE_SIZE, starting_after: startingAfter },
  );
  const body = html`<h1>Payments</h1>
<form class="filters" method="get" action="/dashboard/payments">
${select('status', 'Status', PAYMENT_STATUSES, status)}
<label>Reference<input type="text" name="reference" value="${reference ?? ''}" maxlength="64"></label>
<button type="submit">Filter</button> <a href="/dashboard/payments">Clear</a>
</form>
${table(
  ['Payment', 'Created', 'Status', 'Amount', 'Reference', 'Description', 'Settlement', 'Transaction'],
  shown.map(
    (row) => html`<tr data-payment-id="${row.id}">
<td><a href="/dashboard/payments/${row.id}"><code>${row.id}</code></a></td>
<td>${time(row.created_at)}</td>
<td>${badge(row.status)}</td>
<td class="num">${formatDisplay(row.amount_minor, currencyOf(row))}</td>
<td>${maybe(row.reference)}</td>
<td>${maybe(row.description)}</td>
<td class="num">${usdc(row.settlement_minor)}</td>
<td>${row.settlement_tx_hash ? html`<code class="tx-hash">${row.settlement_tx_hash}</code>` : maybe(null)}</td>
</tr>`,
  ),
  'No payments match.',
  'payments',
)}
${pager('/dashboard/payments', { status, reference, starting_after: startingAfter }, has_more ? shown.at(-1)?.id : undefined)}`;
  return body;
}

/** One payment for finance: its record, every attempt to pay it, its refunds and every provider message. */
async function paymentPage(services: DashboardServices, session: DashboardSession, row: PaymentRow): Promise<SafeHtml> {
  const p = presentPayment(services.config, row);
  // What finance needs to answer "did this payer pay?": every attempt and every provider message.
  const attempts = await listPaymentAttempts(services.db, row.id);
  const railEvents = await listRailEvents(services.db, row.id);
  const refunds = await listPaymentRefunds(services.db, session, row.id);
  const body = html`<h1>Payment <code>${p.id}</code></h1>
<div class="card"><dl class="facts">
<dt>Status</dt><dd>${badge(p.status)}</dd>
<dt>Amount</dt><dd>${formatDisplay(row.amount_minor, currencyOf(row))}${
    row.refunded_minor > 0n && html` (refunded ${formatDisplay(row.refunded_minor, currencyOf(row))})`
  }</dd>
<dt>Merchant name</dt><dd>${maybe(p.merchant_name)}</dd>
<dt>Description</dt><dd>${maybe(p.description)}</dd>
<dt>Reference</dt><dd>${maybe(p.reference)}</dd>
<dt>Checkout</dt><dd><code>${checkoutUrl(services.config, p.id)}</code></dd>
<dt>Quote</dt><dd>rate ${p.quote.rate} (${p.quote.source}), fee ${p.quote.fee_bps} bps → ${usdc(row.settlement_minor)}</dd>
<dt>Settles to</dt><dd>${p.payout_address ? html`<code>${p.payout_address}</code>` : 'the custodial balance'}</dd>
<dt>Transaction</dt><dd id="payment-tx-hash">${row.settlement_tx_hash ? html`<code class="tx-hash">${row.settlement_tx_hash}</code>` : maybe(null)}</dd>
<dt>Created</dt><dd>${time(p.created)}</dd>
<dt>Expires</dt><dd>${time(p.expires_at)}</dd>
<dt>Paid</dt><dd>${time(p.paid_at)}</dd>
<dt>Settlement due</dt><dd>${time(p.settlement_due_at)} (${p.settlement_schedule})</dd>
<dt>Settled</dt><dd>${time(p.settled_at)}</dd>
</dl>
<details><summary>Full record (as the API returns it)</summary>${json(p)}</details></div>
<h2>Payment attempts</h2>
${table(
  ['Attempt', 'Started', 'Rail', 'Outcome', 'Payer', 'Provider reference', 'Receipt', "Payer's fee", 'Why', 'Refund'],
  attempts.map(
    (a) => html`<tr data-attempt-id="${a.id}">
<td><code>${a.id}</code></td>
<td>${time(a.created_at)}</td>
<td>${a.rail}</td>
<td>${badge(a.late ? 'late success' : a.outcome)}</td>
<td>${maybe(a.payer_hint)}</td>
<td>${maybe(a.provider_reference)}</td>
<td>${maybe(a.provider_receipt)}</td>
<td class="num" data-payer-fee>${a.payer_fee_minor === null ? maybe(null) : formatDisplay(a.payer_fee_minor, currencyOf(row))}</td>
<td>${maybe(a.failure_reason)}</td>
<td>${maybe(a.refund_status === 'manual' ? 'due: reverse it in the M-Pesa portal' : a.refund_status)}</td>
</tr>`,
  ),
  'No attempt yet.',
  'attempts',
)}
<h2>Refunds</h2>
${table(
  ['Refund', 'Created', 'Amount', 'Status', 'Provider status', 'Provider reference', 'Why'],
  refunds.map((r) => {
    const action = refundActionRequired(r);
    return html`<tr data-refund-id="${r.id}" data-provider-status="${r.provider_status ?? ''}">
<td><code>${r.id}</code></td>
<td>${time(r.created_at)}</td>
<td class="num">${formatDisplay(r.amount_minor, currencyOf(row))}</td>
<td>${badge(r.status)}</td>
<td>${r.provider_status ? badge(r.provider_status) : maybe(null)}</td>
<td>${maybe(r.provider_reference)}</td>
<td>${action ? html`<p class="notice bad" data-action-required>${action}</p>` : maybe(r.failure_reason ?? r.reason)}</td>
</tr>`;
  }),
  'No refund.',
  'refunds',
)}
<h2>Provider messages</h2>
${table(
  ['When', 'Rail', 'Kind', 'Verdict', 'Detail'],
  railEvents.map(
    (e) => html`<tr data-rail-event="${e.verdict}">
<td>${time(e.created_at)}</td>
<td>${e.rail}</td>
<td>${e.kind}</td>
<td>${badge(e.verdict)}</td>
<td>${e.detail}</td>
</tr>`,
  ),
  'No provider messages.',
  'rail-events',
)}
<p><a href="/dashboard/payments">All payments</a></p>`;
  return body;
}

export function registerPayments(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('payments').scopes } };

  app.get('/payments', { config: access }, async (request, reply) => {
    const body = await paymentsPage(services, sessionOf(request), request.query);
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Payments', body, { section: 'payments' }));
  });

  app.get<{ Params: { id: string } }>('/payments/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const row = await findPayment(services.db, session, request.params.id);
    if (!row) throw new AppError('not_found', `No such payment: '${request.params.id}'.`, { param: 'id' });
    const body = await paymentPage(services, session, row);
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Payment ${row.id}`, body, { section: 'payments' }),
    );
  });
}
