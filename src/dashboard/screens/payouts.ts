import type { FastifyInstance } from 'fastify';
import { html } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import { findPayout, listPayoutsPage } from '../../db/repositories/payouts.ts';
import { PAYOUT_STATUSES, presentPayout } from '../../payouts/present.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import { badge, json, maybe, pager, param, renderPage, screen, select, table, time, usdc } from '../view.ts';

const PAGE_SIZE = 50;
type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

export function registerPayouts(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime } = deps;
  const access = { dashboard: { scopes: screen('payouts').scopes } };

  app.get('/payouts', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const status = param(request.query, 'status');
    const startingAfter = param(request.query, 'starting_after');
    if (status !== undefined && !PAYOUT_STATUSES.includes(status as PayoutStatus)) {
      throw new AppError('invalid_request', `status must be one of ${PAYOUT_STATUSES.join(', ')}.`, {
        param: 'status',
      });
    }
    const { data: shown, has_more } = await listPayoutsPage(
      runtime.db,
      session,
      { status: status as PayoutStatus | undefined },
      { limit: PAGE_SIZE, starting_after: startingAfter },
    );
    const body = html`<h1>Payouts</h1>
<form class="filters" method="get" action="/dashboard/payouts">
${select('status', 'Status', PAYOUT_STATUSES, status)}
<button type="submit">Filter</button> <a href="/dashboard/payouts">Clear</a>
</form>
${table(
  ['Payout', 'Created', 'Status', 'Amount', 'To', 'Reference', 'Channel', 'Transaction'],
  shown.map(
    (row) => html`<tr data-payout-id="${row.id}">
<td><a href="/dashboard/payouts/${row.id}"><code>${row.id}</code></a></td>
<td>${time(row.created_at)}</td>
<td>${badge(row.status)}</td>
<td class="num">${usdc(row.amount_minor)}</td>
<td><code>${row.to_address}</code></td>
<td>${maybe(row.reference)}</td>
<td>${row.channel}</td>
<td>${row.tx_hash ? html`<code class="tx-hash">${row.tx_hash}</code>` : maybe(null)}</td>
</tr>`,
  ),
  'No payouts match.',
  'payouts',
)}
${pager('/dashboard/payouts', { status, starting_after: startingAfter }, has_more ? shown.at(-1)?.id : undefined)}`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Payouts', body, { section: 'payouts' }));
  });

  app.get<{ Params: { id: string } }>('/payouts/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const row = await findPayout(runtime.db, session, request.params.id);
    if (!row) throw new AppError('not_found', `No such payout: '${request.params.id}'.`, { param: 'id' });
    const p = presentPayout(row);
    const body = html`<h1>Payout <code>${p.id}</code></h1>
<div class="card"><dl class="facts">
<dt>Status</dt><dd id="payout-status">${badge(p.status)}</dd>
<dt>Amount</dt><dd>${usdc(row.amount_minor)}</dd>
<dt>To</dt><dd><code>${p.to_address}</code></dd>
<dt>Reference</dt><dd>${maybe(p.reference)}</dd>
<dt>Memo</dt><dd>${maybe(p.memo)}</dd>
<dt>Channel</dt><dd>${row.channel}</dd>
<dt>Transaction</dt><dd id="payout-tx-hash">${p.tx_hash ? html`<code class="tx-hash">${p.tx_hash}</code>` : html`<span class="muted">not yet on chain</span>`}</dd>
<dt>Chain</dt><dd>${maybe(p.chain_id)}</dd>
<dt>Gas used</dt><dd>${maybe(p.gas_used)}</dd>
${p.failure_reason && html`<dt>Failure</dt><dd>${p.failure_reason}</dd>`}
<dt>Created</dt><dd>${time(p.created)}</dd>
<dt>Settled</dt><dd>${time(p.settled_at)}</dd>
${p.failed_at && html`<dt>Failed</dt><dd>${time(p.failed_at)}</dd>`}
</dl>
<details><summary>Full record (as the API returns it)</summary>${json(p)}</details></div>
<p><a href="/dashboard/payouts">All payouts</a></p>`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), `Payout ${p.id}`, body, { section: 'payouts' }));
  });
}
