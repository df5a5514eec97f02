import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ActionScope, actionsCsv, listActions } from '../../agent/actions-query.ts';
import { ACTION_STATUSES, type ActionRow, loadActionHistory, loadActionRows } from '../../audit/action-rows.ts';
import {
  freshVerification,
  presentVerification,
  type StoredVerification,
  verifyAccount,
} from '../../audit/verification.ts';
import { html, type SafeHtml } from '../../checkout/html.ts';
import type { Db } from '../../db/database.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import { SYSTEM_TOOLS } from '../../../tools/registry.ts';
import { formatAmount, getCurrency, parseMajorAmount } from '../../domain/money.ts';
import { actionStatusWords, channelWords, decisionWords, reasonWords, toolWords } from '../words.ts';
import {
  badge,
  clippedCode,
  csrfField,
  dayBound,
  idLink,
  json,
  keyRef,
  maybe,
  notice,
  pager,
  param,
  reasonsList,
  renderPage,
  screen,
  select,
  table,
  time,
  txHash,
  withQuery,
} from '../view.ts';

const DECISIONS = ['allow', 'require_confirmation', 'deny', 'not_checked'];
const CHANNELS = ['api', 'agent', 'mcp', 'system'];
const PAGE_SIZE = 50;
/** The CSV export reads the whole filtered log in pages of the API's largest size, up to this many rows. */
const CSV_MAX_ROWS = 10_000;
const CSV_PAGE = 500;

/** The filters as the page's form sends them: dates are days (UTC), the rest as the API has them. */
interface ActionFilters {
  /** "1": show the service's own steps (channel system) too; hidden by default. */
  system: string | undefined;
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
    system: param(q, 'system') === '1' ? '1' : undefined,
    status: param(q, 'status'),
    tool: param(q, 'tool'),
    decision: param(q, 'decision'),
    channel: param(q, 'channel'),
    from: param(q, 'from'),
    to: param(q, 'to'),
  };
}

function day(value: string | undefined, name: string, end: boolean): string | undefined {
  return dayBound(value, name, end);
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

/**
 * The service's own steps (channel system: a payment paid, a batch settled) are hidden unless the
 * page asks for them (the toggle), or an action, decision or channel is chosen, which says itself
 * which rows to show (a system tool, or `not_checked`, is a choice of system steps; the others have
 * none). Finance reads people's and the agent's actions first. The plain list reads an index of
 * exactly those rows (migration 030).
 */
function hidden(filters: ActionFilters): { excludeChannels: 'system'[] } | undefined {
  const chosen = filters.system === '1' || filters.channel || filters.tool || filters.decision;
  return chosen ? undefined : { excludeChannels: ['system'] };
}

async function allActions(db: Db, scope: ActionScope, filters: ActionFilters, now: Date): Promise<ActionRow[]> {
  const rows: ActionRow[] = [];
  let after: string | undefined;
  while (rows.length < CSV_MAX_ROWS) {
    const page = await listActions(
      db,
      scope,
      toApiQuery(filters, { limit: CSV_PAGE, starting_after: after }),
      now,
      hidden(filters),
    );
    rows.push(...page.rows);
    if (!page.has_more || page.rows.length === 0) break;
    after = page.rows.at(-1)!.id;
  }
  return rows.slice(0, CSV_MAX_ROWS);
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** "Log verified through #N at T", or what broke, from the account's last verification. */
function verificationLine(stored: StoredVerification | undefined, livemode: boolean, csrf: SafeHtml): SafeHtml {
  const button = html`<form class="inline" method="post" action="/dashboard/actions/verify">${csrf}<button type="submit" id="verify-log">Verify now</button></form>`;
  if (!stored) {
    return notice('info', html`<span id="log-verification">The action log has not been verified yet.</span> ${button}`);
  }
  const view = presentVerification(stored, livemode);
  if (view.ok) {
    return notice(
      'ok',
      html`<span id="log-verification">Log verified through #${view.through_seq ?? '0'} at ${time(view.verified_at)}: ${view.actions_checked} actions and ${view.runs_checked} runs match it.</span> ${button}`,
    );
  }
  return notice(
    'bad',
    html`<span id="log-verification">Log verification FAILED at ${time(view.verified_at)}: ${view.broken?.message}.</span> ${button}`,
  );
}

export function registerActions(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('actions').scopes } };
  const toolNames = [...deps.tools, ...SYSTEM_TOOLS].map((t) => t.name);

  app.get('/actions', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const filters = readFilters(request);
    const startingAfter = param(request.query, 'starting_after');
    const now = services.clock.now();
    const { rows, has_more } = await listActions(
      services.db,
      session,
      toApiQuery(filters, { limit: PAGE_SIZE, starting_after: startingAfter }),
      now,
      hidden(filters),
    );
    const verified = await freshVerification(services.db, session.accountId, now);
    const query = { ...filters };
    const body = html`<h1>Actions</h1>
<p class="muted">Every money action from any channel and every agent and assistant tool call, newest first, each as it stands now. Times are UTC. The service's own steps (a payment received, a batch settled on chain) are shown with <em>Show system steps</em>, and are always in the export.</p>
${verificationLine(verified, session.livemode, csrfField(session))}
<form class="filters" method="get" action="/dashboard/actions">
${select('status', 'Status', ACTION_STATUSES, filters.status, 'Any', actionStatusWords)}
${select('tool', 'Action', toolNames, filters.tool, 'Any', toolWords)}
${select('decision', 'Decision', DECISIONS, filters.decision, 'Any', decisionWords)}
${select('channel', 'Channel', CHANNELS, filters.channel, 'Any', channelWords)}
<label>From<input type="date" name="from" value="${filters.from ?? ''}"></label>
<label>To<input type="date" name="to" value="${filters.to ?? ''}"></label>
<label class="check"><input type="checkbox" name="system" value="1"${filters.system && html` checked`}>Show system steps</label>
<button type="submit">Filter</button> <a href="/dashboard/actions">Clear</a>
</form>
<p class="actions"><a class="button" id="export-csv" href="${withQuery('/dashboard/actions.csv', { ...query, system: '1' })}" download>Export CSV</a>
<span class="muted">Every movement matching these filters, system steps included, one line per leg (up to ${CSV_MAX_ROWS.toLocaleString('en')} actions).</span></p>
${table(
  ['When', 'Asked by', 'Action', 'Amount', 'To or from', 'Decision', 'Status', 'Transaction'],
  rows.map(actionLine),
  'No actions match.',
  'actions',
)}
${pager('/dashboard/actions', { ...query, starting_after: startingAfter }, has_more ? rows.at(-1)?.id : undefined)}`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Actions', body, { section: 'actions' }));
  });

  app.post('/actions/verify', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    await verifyAccount(services.db, session.accountId, services.clock.now());
    return reply.redirect('/dashboard/actions', 303);
  });

  app.get<{ Params: { id: string } }>('/actions/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const history = await loadActionHistory(services.db, session, request.params.id);
    const [row] = await loadActionRows(services.db, [request.params.id], services.clock.now());
    const action = row!;
    const labels = labelsOf(action);
    const stepLabels = new Map(history.flatMap((step) => (step.key_id && step.key ? [[step.key_id, step.key]] : [])));
    const body = html`<h1>Action <code>${action.id}</code></h1>
<div class="card">
<dl class="facts" id="action-facts">
<dt>When</dt><dd>${time(action.created)}, ${channelWords(action.channel)} (<code>${action.channel}</code>)</dd>
<dt>Asked by</dt><dd>${keyRef(labels, action.key_id)}</dd>
${action.run_id && html`<dt>Agent run</dt><dd><a href="/dashboard/runs/${action.run_id}#${action.id}"><code>${action.run_id}</code></a>: ${maybe(action.instruction)}</dd>`}
<dt>Action</dt><dd>${toolWords(action.tool)} (<code>${action.tool}</code>)</dd>
<dt>Amount</dt><dd id="action-amount">${maybe(amountShown(action.amount, action.asset))}</dd>
<dt>Recipient</dt><dd>${action.recipient ? html`<code>${action.recipient}</code>` : maybe(null)}</dd>
<dt>Payment</dt><dd>${action.payment_id ? html`<code>${action.payment_id}</code>` : maybe(null)}</dd>
<dt>Memo or reason</dt><dd>${maybe(action.memo)}</dd>
<dt>Decision</dt><dd>${badge(action.decision.outcome, decisionWords(action.decision.outcome))}${reasonsList(action.decision.reasons)}</dd>
${action.confirmation_id && html`<dt>Confirmation</dt><dd><a href="/dashboard/confirmations/${action.confirmation_id}"><code>${action.confirmation_id}</code></a></dd>`}
<dt>Decided by</dt><dd id="action-decided-by">${keyRef(labels, action.approved_by_key)}${action.decided_at && html` at ${time(action.decided_at)}`}</dd>
<dt>Status</dt><dd>${badge(action.status, actionStatusWords(action.status))}</dd>
<dt>Object created</dt><dd id="action-object">${action.object_id ? html`<code>${action.object_id}</code>` : maybe(null)}</dd>
<dt>Transaction</dt><dd>${action.tx_hash ? html`<code class="tx-hash">${action.tx_hash}</code>` : maybe(null)}</dd>
${action.error !== null && html`<dt>Error</dt><dd>${json(action.error)}</dd>`}
</dl>
<details><summary>Input</summary>${json(action.input)}</details>
${action.result !== null && html`<details><summary>Output</summary>${json(action.result)}</details>`}
</div>
<h2>Steps</h2>
<p class="muted">As the action log records them, approval attempts that failed included.</p>
<ol class="steps" id="action-history">${history.map(
      (step) =>
        html`<li data-seq="${step.seq}" data-type="${step.type}">${time(step.at)} <strong>${step.step}</strong>${
          step.key_id && html` by ${keyRef(stepLabels, step.key_id, true)}`
        } <span class="muted">(log entry #${step.seq})</span>${step.error !== null && html`${json(step.error)}`}</li>`,
    )}</ol>
<p><a href="/dashboard/actions">All actions</a></p>`;
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Action ${action.id}`, body, { section: 'actions' }),
    );
  });

  app.get('/actions.csv', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const rows = await allActions(services.db, session, readFilters(request), services.clock.now());
    const stamp = services.clock.now().toISOString().slice(0, 10);
    const mode = session.livemode ? 'live' : 'test';
    return reply
      .header('Content-Type', 'text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="agent-actions-${mode}-${stamp}.csv"`)
      .send(await actionsCsv(services.db, rows));
  });
}

/** The key labels a row carries, as keyRef reads them. */
function labelsOf(row: ActionRow): Map<string, string> {
  const labels = new Map<string, string>();
  if (row.key_id !== null && row.requested_by !== null) labels.set(row.key_id, row.requested_by);
  if (row.approved_by_key !== null && row.decided_by !== null) labels.set(row.approved_by_key, row.decided_by);
  return labels;
}

/** An amount in its asset as finance reads it: grouped, its own decimals ("1,000,000,000.00 USDC"). */
export function amountShown(amount: string | null, asset: string | null): string | null {
  const currency = asset === null ? undefined : getCurrency(asset);
  if (amount === null || !currency) return amount === null ? null : `${amount} ${asset ?? ''}`.trim();
  const parsed = parseMajorAmount(amount, currency);
  return parsed.ok ? formatAmount(parsed.minor, currency) : `${amount} ${currency.code}`;
}

/** One action in the list: eight columns that fit a 1280 px screen; the rest is on its page. */
function actionLine(row: ActionRow): SafeHtml {
  const labels = labelsOf(row);
  const recipients = (row.recipient ?? '').split(' ').filter(Boolean);
  return html`<tr data-action-id="${row.id}" data-status="${row.status}" data-tool="${row.tool}">
<td><a href="/dashboard/actions/${row.id}">${time(row.created)}</a></td>
<td class="requested-by">${channelWords(row.channel)}${row.key_id && html`<br>${keyRef(labels, row.key_id, true)}`}</td>
<td class="what"><strong>${toolWords(row.tool)}</strong>${row.memo && html`<br><span class="muted">${shorten(row.memo, 60)}</span>`}${
    row.instruction && html`<br><span class="muted" title="${row.instruction}">“${shorten(row.instruction, 60)}”</span>`
  }${row.run_id && html` ${idLink(`/dashboard/runs/${row.run_id}#${row.id}`, row.run_id)}`}</td>
<td class="num amount">${maybe(amountShown(row.amount, row.asset))}</td>
<td class="recipient">${recipients.map((r, i) => html`${i > 0 && html`<br>`}${clippedCode(r)}`)}${
    row.payment_id && html`${recipients.length > 0 && html`<br>`}${clippedCode(row.payment_id)}`
  }${recipients.length === 0 && !row.payment_id && maybe(null)}</td>
<td class="decision">${badge(row.decision.outcome, decisionWords(row.decision.outcome))}${
    row.decision.outcome !== 'allow' &&
    row.decision_reasons &&
    html`<br><span class="muted">${shorten(reasonWords(reasonsOnly(row)), 90)}</span>`
  }${row.approved_by_key && html`<br><span class="decided-by">${row.status === 'rejected' ? 'Rejected' : 'Approved'} by ${keyRef(labels, row.approved_by_key, true)}</span>`}</td>
<td class="status">${badge(row.status, actionStatusWords(row.status))}${
    row.confirmation_id &&
    row.status === 'held' &&
    html`<br><a href="/dashboard/confirmations/${row.confirmation_id}">Review</a>`
  }${row.object_id && html`<br>${objectLink(row.object_id)}`}</td>
<td>${txHash(row.tx_hash ?? batchTxHash(row))}</td>
</tr>`;
}

/** The reasons for the decision, without the rule codes: "250 USDC is above …; …". */
function reasonsOnly(row: ActionRow): string {
  return row.decision.reasons
    .filter((r) => r.outcome === row.decision.outcome)
    .map((r) => r.reason)
    .join('; ');
}

/** What an action created, linked to its page where the dashboard has one. */
function objectLink(id: string): SafeHtml {
  const page = id.startsWith('po_') ? 'payouts' : id.startsWith('pay_') ? 'payments' : undefined;
  return page === undefined ? clippedCode(id) : idLink(`/dashboard/${page}/${id}`, id);
}

/** A settlement batch's own transaction, as its step recorded it (its lines in the CSV carry it too). */
function batchTxHash(row: ActionRow): string | null {
  const result = row.result as { batch_id?: unknown; tx_hash?: unknown } | null;
  return typeof result?.batch_id === 'string' && typeof result.tx_hash === 'string' ? result.tx_hash : null;
}
