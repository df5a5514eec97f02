import type { FastifyInstance, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import type { ModeScope } from '../../db/database.ts';
import { findPayout } from '../../db/repositories/payouts.ts';
import { presentPayout } from '../../payouts/present.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import {
  loadPayoutScreen,
  PAYOUT_SCREEN_STATUSES,
  type PayoutScreenQuery,
  type PayoutScreenRow,
  type PayoutScreenStatus,
  payoutsCsv,
} from '../payout-rows.ts';
import {
  badge,
  clippedCode,
  dayBound,
  idLink,
  json,
  keyRef,
  maybe,
  pager,
  param,
  renderPage,
  screen,
  select,
  table,
  time,
  txHash,
  usdc,
  withQuery,
} from '../view.ts';

const PAGE_SIZE = 50;
/** The export reads the filtered payouts in pages, up to this many rows. */
const CSV_MAX_ROWS = 10_000;
const CSV_PAGE = 500;

interface PayoutFilters {
  status: string | undefined;
  from: string | undefined;
  to: string | undefined;
}

function readFilters(request: FastifyRequest): PayoutFilters {
  const q = request.query;
  return { status: param(q, 'status'), from: param(q, 'from'), to: param(q, 'to') };
}

/** The form's filters as the rows' query: a 400 naming the field for a status or day it cannot take. */
function toQuery(filters: PayoutFilters): PayoutScreenQuery {
  if (filters.status !== undefined && !PAYOUT_SCREEN_STATUSES.includes(filters.status as PayoutScreenStatus)) {
    throw new AppError('invalid_request', `status must be one of ${PAYOUT_SCREEN_STATUSES.join(', ')}.`, {
      param: 'status',
    });
  }
  const from = dayBound(filters.from, 'from', false);
  const to = dayBound(filters.to, 'to', true);
  return {
    status: filters.status as PayoutScreenStatus | undefined,
    created_gte: from === undefined ? undefined : new Date(from),
    created_lte: to === undefined ? undefined : new Date(to),
  };
}

function approver(row: PayoutScreenRow): SafeHtml {
  if (row.status === 'held' && row.confirmationId) {
    return html`<a href="/dashboard/confirmations/${row.confirmationId}">Waiting for approval</a>`;
  }
  if (row.approvedByKey === null) return html`<span class="muted">Not needed</span>`;
  const labels = new Map(row.approvedBy === null ? [] : [[row.approvedByKey, row.approvedBy]]);
  return html`${keyRef(labels, row.approvedByKey, true)}${row.approvedAt && html`<br>${time(row.approvedAt)}`}`;
}

function payoutLine(row: PayoutScreenRow): SafeHtml {
  const link = row.status === 'held' ? `/dashboard/confirmations/${row.id}` : `/dashboard/payouts/${row.id}`;
  const to = row.to.split(' ').filter(Boolean);
  return html`<tr data-payout-id="${row.id}" data-status="${row.status}">
<td>${idLink(link, row.id)}</td>
<td>${time(row.created)}</td>
<td class="num">${maybe(row.amountShown)}</td>
<td>${to.map((address, i) => html`${i > 0 && html`<br>`}${clippedCode(address)}`)}</td>
<td class="memo">${maybe(row.reference)}${row.memo && html`<br><span class="muted">${row.memo}</span>`}</td>
<td class="decided-by">${approver(row)}</td>
<td>${badge(row.status)}</td>
<td>${txHash(row.txHash)}</td>
</tr>`;
}

export function registerPayouts(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('payouts').scopes } };

  app.get('/payouts', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const filters = readFilters(request);
    const startingAfter = param(request.query, 'starting_after');
    const { held, payouts, has_more } = await loadPayoutScreen(
      services.db,
      session,
      toQuery(filters),
      { limit: PAGE_SIZE, starting_after: startingAfter },
      services.clock.now(),
    );
    const body = html`<h1>Payouts</h1>
<p class="muted">Payouts from the balance, a revenue share's legs among them, newest first; payouts the policy holds for approval first. Times are UTC.</p>
<form class="filters" method="get" action="/dashboard/payouts">
${select('status', 'Status', PAYOUT_SCREEN_STATUSES, filters.status)}
<label>From<input type="date" name="from" value="${filters.from ?? ''}"></label>
<label>To<input type="date" name="to" value="${filters.to ?? ''}"></label>
<button type="submit">Filter</button> <a href="/dashboard/payouts">Clear</a>
</form>
<p class="actions"><a class="button" id="export-csv" href="${withQuery('/dashboard/payouts.csv', { ...filters })}" download>Export CSV</a>
<span class="muted">All payouts matching these filters (up to ${CSV_MAX_ROWS.toLocaleString('en')}), held ones included.</span></p>
${table(
  ['Payout', 'Created', 'Amount', 'To', 'Reference', 'Approved by', 'Status', 'Transaction'],
  [...held, ...payouts].map(payoutLine),
  'No payouts match.',
  'payouts',
)}
${pager('/dashboard/payouts', { ...filters, starting_after: startingAfter }, has_more ? payouts.at(-1)?.id : undefined)}`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Payouts', body, { section: 'payouts' }));
  });

  app.get('/payouts.csv', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const rows = await allPayouts(deps, session, toQuery(readFilters(request)));
    const stamp = services.clock.now().toISOString().slice(0, 10);
    const mode = session.livemode ? 'live' : 'test';
    return reply
      .header('Content-Type', 'text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="payouts-${mode}-${stamp}.csv"`)
      .send(payoutsCsv(rows));
  });

  app.get<{ Params: { id: string } }>('/payouts/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const row = await findPayout(services.db, session, request.params.id);
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

async function allPayouts(deps: DashboardDeps, scope: ModeScope, query: PayoutScreenQuery): Promise<PayoutScreenRow[]> {
  const { services } = deps;
  const rows: PayoutScreenRow[] = [];
  let after: string | undefined;
  while (rows.length < CSV_MAX_ROWS) {
    const page = await loadPayoutScreen(
      services.db,
      scope,
      query,
      { limit: CSV_PAGE, starting_after: after },
      services.clock.now(),
    );
    rows.push(...page.held, ...page.payouts);
    if (!page.has_more || page.payouts.length === 0) break;
    after = page.payouts.at(-1)!.id;
  }
  return rows.slice(0, CSV_MAX_ROWS);
}
