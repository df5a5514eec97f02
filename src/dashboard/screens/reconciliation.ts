import type { FastifyInstance } from 'fastify';
import { html } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import { findRun, listCompletedRunsFor, listRunLines } from '../../db/repositories/reconciliation-runs.ts';
import type { ReconciliationRunRow } from '../../db/tables/reconciliation.ts';
import { formatDisplay, getCurrency } from '../../domain/money.ts';
import { LINE_KINDS, type LineKind } from '../../reconciliation/lines.ts';
import { linesCsv } from '../../reconciliation/present.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { maybe, renderPage, screen, table, time } from '../view.ts';

/** Two months of days. */
const RUNS_SHOWN = 62;

/**
 * The daily reconciliation as a merchant's finance sees it (docs/reconciliation.md, "Who sees
 * what"): every run, and on each the lines about the signed-in account's own payments and
 * settlements in the signed-in mode. The rest of a run (other merchants, the operator's provider
 * accounts, the treasury) is the operator's, read with the CLI or the operator API.
 */
export function registerReconciliation(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('reconciliation').scopes } };

  /** A completed run, whichever day; its lines are filtered to the session's account and mode. */
  const completedRun = async (id: string): Promise<ReconciliationRunRow> => {
    const run = await findRun(services.db, id);
    if (run?.status !== 'completed') {
      throw new AppError('not_found', `No such reconciliation: '${id}'.`, { param: 'id' });
    }
    return run;
  };
  const ownLines = (run: ReconciliationRunRow, session: DashboardSession) =>
    listRunLines(services.db, run.id, { accountId: session.accountId, livemode: session.livemode });

  app.get('/reconciliation', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const runs = await listCompletedRunsFor(services.db, session, RUNS_SHOWN);
    const body = html`<h1>Reconciliation</h1>
<p>Every day plainpay holds what the payment providers say they collected against what it booked and
what it settled on chain. These are the differences about your payments and settlements (${session.livemode ? 'live' : 'test'} mode);
none means they all matched.</p>
${table(
  ['Day', 'Run', 'Finished', 'Differences for you'],
  runs.map(
    (run) => html`<tr data-run-id="${run.id}">
<td><a href="/dashboard/reconciliation/${run.id}">${run.day}</a></td>
<td>${run.trigger}</td>
<td>${time(run.finished_at)}</td>
<td class="num" data-lines="${String(run.lines)}">${String(run.lines)}</td>
</tr>`,
  ),
  'No reconciliation has run yet.',
  'reconciliation-runs',
)}`;
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), 'Reconciliation', body, { section: 'reconciliation' }),
    );
  });

  app.get<{ Params: { id: string } }>('/reconciliation/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const run = await completedRun(request.params.id);
    const lines = await ownLines(run, session);
    const amount = (minor: bigint | null, currency: string) => {
      const known = getCurrency(currency);
      return minor === null ? maybe(null) : known ? formatDisplay(minor, known) : `${minor} (${currency})`;
    };
    const body = html`<h1>Reconciliation of ${run.day}</h1>
<p class="muted">Run <code>${run.id}</code> (${run.trigger}), finished ${time(run.finished_at)}.</p>
<p class="actions"><a class="button" id="export-csv" href="/dashboard/reconciliation/${run.id}/lines.csv" download>Export CSV</a></p>
${table(
  ['#', 'What', 'Payment', 'Reference', 'Provider or chain', 'Booked', 'Detail'],
  lines.map(
    (l) => html`<tr data-kind="${l.kind}" data-payment-id="${l.payment_id ?? ''}">
<td>${String(l.line_no)}</td>
<td><strong>${l.kind.replaceAll('_', ' ')}</strong><br><span class="muted">${LINE_KINDS[l.kind as LineKind] ?? ''}</span></td>
<td>${l.payment_id ? html`<a href="/dashboard/payments/${l.payment_id}"><code>${l.payment_id}</code></a>` : maybe(null)}</td>
<td>${l.reference ? html`<code>${l.reference}</code>` : maybe(null)}</td>
<td class="num">${amount(l.source_amount_minor, l.currency)}</td>
<td class="num">${amount(l.ledger_amount_minor, l.currency)}</td>
<td>${l.detail}</td>
</tr>`,
  ),
  'No difference about your payments or settlements: everything matched.',
  'reconciliation-lines',
)}
<p><a href="/dashboard/reconciliation">All days</a></p>`;
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Reconciliation of ${run.day}`, body, { section: 'reconciliation' }),
    );
  });

  app.get<{ Params: { id: string } }>('/reconciliation/:id/lines.csv', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const run = await completedRun(request.params.id);
    const mode = session.livemode ? 'live' : 'test';
    return reply
      .header('Content-Type', 'text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="reconciliation-${mode}-${run.day}.csv"`)
      .send(linesCsv(run, await ownLines(run, session)));
  });
}
