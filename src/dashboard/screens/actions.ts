import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ActionScope, actionsCsv, listActions } from '../../agent/actions-query.ts';
import { html } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import type { Db } from '../../db/database.ts';
import type { AgentActionRow } from '../../db/tables/money.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import { loadKeyLabels } from '../key-labels.ts';
import {
  badge,
  idLink,
  keyRef,
  maybe,
  pager,
  param,
  renderPage,
  screen,
  select,
  table,
  time,
  withQuery,
} from '../view.ts';

const STATUSES = ['executed', 'held', 'denied', 'failed', 'rejected', 'planned'];
const DECISIONS = ['allow', 'require_confirmation', 'deny', 'not_checked'];
const CHANNELS = ['api', 'agent', 'mcp'];
const PAGE_SIZE = 50;
/** The CSV export reads the whole filtered log in pages of the API's largest size, up to this many rows. */
const CSV_MAX_ROWS = 10_000;
const CSV_PAGE = 500;

/** The filters as the page's form sends them: dates are days (UTC), the rest as the API has them. */
interface ActionFilters {
  status: string | undefined;
  tool: string | undefined;
  decision: string | undefined;
  channel: string | undefined;
  from: string | undefined;
  to: string | undefined;
}

function readFilters(request: FastifyRequest): ActionFilters {
  const q = request.query;
  return {
    status: param(q, 'status'),
    tool: param(q, 'tool'),
    decision: param(q, 'decision'),
    channel: param(q, 'channel'),
    from: param(q, 'from'),
    to: param(q, 'to'),
  };
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function day(value: string | undefined, name: string, end: boolean): string | undefined {
  if (value === undefined) return undefined;
  if (!DAY.test(value) || Number.isNaN(Date.parse(value))) {
    throw new AppError('invalid_request', `The ${name} date must be a day such as 2026-11-22.`, { param: name });
  }
  return `${value}T${end ? '23:59:59.999' : '00:00:00.000'}Z`;
}

/** The page's filters as the API's actions query (agent/actions-query.ts), so both filter alike. */
function toApiQuery(filters: ActionFilters, extra: { limit: number; starting_after?: string | undefined }) {
  return {
    ...(filters.status && { status: filters.status }),
    ...(filters.tool && { tool: filters.tool }),
    ...(filters.decision && { decision: filters.decision }),
    ...(filters.channel && { channel: filters.channel }),
    ...(filters.from && { created_gte: day(filters.from, 'from', false) }),
    ...(filters.to && { created_lte: day(filters.to, 'to', true) }),
    limit: extra.limit,
    ...(extra.starting_after && { starting_after: extra.starting_after }),
  };
}

async function allActions(db: Db, scope: ActionScope, filters: ActionFilters): Promise<AgentActionRow[]> {
  const rows: AgentActionRow[] = [];
  let after: string | undefined;
  while (rows.length < CSV_MAX_ROWS) {
    const page = await listActions(db, scope, toApiQuery(filters, { limit: CSV_PAGE, starting_after: after }));
    rows.push(...page.rows);
    if (!page.has_more || page.rows.length === 0) break;
    after = page.rows.at(-1)!.id;
  }
  return rows.slice(0, CSV_MAX_ROWS);
}

export function registerActions(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime } = deps;
  const access = { dashboard: { scopes: screen('actions').scopes } };
  const toolNames = deps.tools.map((t) => t.name);

  app.get('/actions', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const filters = readFilters(request);
    const startingAfter = param(request.query, 'starting_after');
    const { rows, has_more } = await listActions(
      runtime.db,
      session,
      toApiQuery(filters, { limit: PAGE_SIZE, starting_after: startingAfter }),
    );
    const labels = await loadKeyLabels(runtime.db, session.accountId, [
      ...rows.map((r) => r.key_id),
      ...rows.map((r) => r.approved_by_key),
    ]);
    const query = { ...filters };
    const body = html`<h1>Actions</h1>
<p class="muted">Every money tool call from any channel, and every agent and MCP tool call, newest first. Times are UTC.</p>
<form class="filters" method="get" action="/dashboard/actions">
${select('status', 'Status', STATUSES, filters.status)}
${select('tool', 'Tool', toolNames, filters.tool)}
${select('decision', 'Decision', DECISIONS, filters.decision)}
${select('channel', 'Channel', CHANNELS, filters.channel)}
<label>From<input type="date" name="from" value="${filters.from ?? ''}"></label>
<label>To<input type="date" name="to" value="${filters.to ?? ''}"></label>
<button type="submit">Filter</button> <a href="/dashboard/actions">Clear</a>
</form>
<p class="actions"><a class="button" id="export-csv" href="${withQuery('/dashboard/actions.csv', query)}" download>Export CSV</a>
<span class="muted">All actions matching these filters (up to ${CSV_MAX_ROWS.toLocaleString('en')}).</span></p>
${table(
  ['Action', 'Created', 'Channel', 'Tool', 'Decision', 'Status', 'Run', 'Confirmation', 'Key', 'Decided by'],
  rows.map(
    (row) => html`<tr data-action-id="${row.id}" data-status="${row.status}">
<td><code>${row.id}</code></td>
<td>${time(row.created_at)}</td>
<td>${row.channel}</td>
<td><code>${row.tool}</code></td>
<td>${badge(row.decision)}</td>
<td>${badge(row.status)}</td>
<td>${row.run_id ? idLink(`/dashboard/runs/${row.run_id}#${row.id}`, row.run_id) : maybe(null)}</td>
<td>${row.confirmation_id ? idLink(`/dashboard/confirmations/${row.confirmation_id}`, row.confirmation_id) : maybe(null)}</td>
<td>${keyRef(labels, row.key_id, true)}</td>
<td>${keyRef(labels, row.approved_by_key, true)}</td>
</tr>`,
  ),
  'No actions match.',
  'actions',
)}
${pager('/dashboard/actions', { ...query, starting_after: startingAfter }, has_more ? rows.at(-1)?.id : undefined)}`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Actions', body, { section: 'actions' }));
  });

  app.get('/actions.csv', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const rows = await allActions(runtime.db, session, readFilters(request));
    const stamp = runtime.clock.now().toISOString().slice(0, 10);
    const mode = session.livemode ? 'live' : 'test';
    return reply
      .header('Content-Type', 'text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="agent-actions-${mode}-${stamp}.csv"`)
      .send(actionsCsv(rows));
  });
}
