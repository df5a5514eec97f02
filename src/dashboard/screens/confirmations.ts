import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError, isAppError } from '../../core/errors.ts';
import type { ConfirmationRow } from '../../db/tables/money.ts';
import { approveConfirmation, rejectConfirmation } from '../../policy/approvals.ts';
import { effectiveStatus, presentConfirmation } from '../../policy/confirmations.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import { loadKeyLabels } from '../key-labels.ts';
import { linkedList, loadLinkedObjects } from '../linked.ts';
import type { DashboardSession } from '../sessions.ts';
import {
  badge,
  csrfField,
  json,
  keyRef,
  notice,
  pager,
  param,
  reasonsList,
  renderPage,
  screen,
  select,
  table,
  time,
} from '../view.ts';
import { afterListedRow } from '../../db/pagination.ts';

const FILTERS = ['pending', 'executed', 'rejected', 'expired', 'all'] as const;
type Filter = (typeof FILTERS)[number];
const PAGE_SIZE = 50;

const DONE: Record<string, SafeHtml> = {
  approved: notice('ok', 'Approved: the action ran with its stored input. Its result is below.'),
  rejected: notice('ok', 'Rejected: nothing moved.'),
};

export function registerConfirmations(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime } = deps;
  const view = { dashboard: { scopes: screen('confirmations').scopes } };
  const decide = { dashboard: { scopes: ['approvals'] as const } };

  app.get('/confirmations', { config: view }, async (request, reply) => {
    const session = sessionOf(request);
    const requested = param(request.query, 'status') ?? 'pending';
    if (!FILTERS.includes(requested as Filter)) {
      throw new AppError('invalid_request', `status must be one of ${FILTERS.join(', ')}.`, { param: 'status' });
    }
    const filter = requested as Filter;
    const startingAfter = param(request.query, 'starting_after');
    const now = runtime.clock.now();
    let q = runtime.db
      .selectFrom('confirmations')
      .selectAll()
      .where('account_id', '=', session.accountId)
      .where('livemode', '=', session.livemode);
    if (filter === 'pending') q = q.where('status', '=', 'pending').where('expires_at', '>', now);
    if (filter === 'expired') {
      q = q.where((eb) =>
        eb.or([eb('status', '=', 'expired'), eb.and([eb('status', '=', 'pending'), eb('expires_at', '<=', now)])]),
      );
    }
    if (filter === 'executed' || filter === 'rejected') q = q.where('status', '=', filter);
    if (startingAfter)
      q = q.where(await afterListedRow(runtime.db, 'confirmations', session, startingAfter, 'confirmation'));
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(PAGE_SIZE + 1)
      .execute();
    const shown = rows.slice(0, PAGE_SIZE);
    const labels = await loadKeyLabels(
      runtime.db,
      session.accountId,
      shown.map((r) => r.requested_by_key),
    );
    const body = html`<h1>Approvals</h1>
<p class="muted">Actions the policy held for a human. ${
      session.scopes.has('approvals')
        ? 'Open one to approve or reject it. The key that asked for an action cannot decide it.'
        : html`You can see them; deciding needs a key with the <code>approvals</code> scope.`
    }</p>
<form class="filters" method="get" action="/dashboard/confirmations">
${select('status', 'Status', FILTERS, filter, 'pending')}
<button type="submit">Show</button>
</form>
${table(
  ['Confirmation', 'Created', 'Summary', 'Tool', 'Channel', 'Status', 'Expires', 'Asked by'],
  shown.map(
    (row) => html`<tr data-confirmation-id="${row.id}">
<td><a href="/dashboard/confirmations/${row.id}"><code>${row.id}</code></a></td>
<td>${time(row.created_at)}</td>
<td>${row.summary}</td>
<td><code>${row.tool}</code></td>
<td>${row.channel}</td>
<td>${badge(effectiveStatus(row, now))}</td>
<td>${time(row.expires_at)}</td>
<td>${keyRef(labels, row.requested_by_key, true)}</td>
</tr>`,
  ),
  filter === 'pending' ? 'Nothing is waiting for approval.' : 'No confirmations match.',
  'confirmations',
)}
${pager(
  '/dashboard/confirmations',
  { status: filter === 'pending' ? undefined : filter, starting_after: startingAfter },
  rows.length > PAGE_SIZE ? shown.at(-1)?.id : undefined,
)}`;
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), 'Approvals', body, { section: 'confirmations' }),
    );
  });

  const load = async (session: DashboardSession, id: string): Promise<ConfirmationRow> => {
    const row = await runtime.db
      .selectFrom('confirmations')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', session.accountId)
      .where('livemode', '=', session.livemode)
      .executeTakeFirst();
    if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
    return row;
  };

  const detail = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    status: number,
    message: SafeHtml | undefined,
  ): Promise<FastifyReply> => {
    const session = sessionOf(request);
    const row = await load(session, id);
    const now = runtime.clock.now();
    const c = presentConfirmation(runtime.config, row, now);
    const labels = await loadKeyLabels(runtime.db, session.accountId, [c.requested_by_key, c.decided_by_key]);
    const linked = await loadLinkedObjects(runtime.db, session, [c.result]);
    const action = await runtime.db
      .selectFrom('agent_actions')
      .select(['id', 'run_id'])
      .where('confirmation_id', '=', c.id)
      .where('account_id', '=', session.accountId)
      .executeTakeFirst();
    const body = html`<h1>Held action <code>${c.id}</code></h1>
${message}
<div class="card">
<p id="confirmation-summary"><strong>${c.summary}</strong></p>
<dl class="facts">
<dt>Status</dt><dd id="confirmation-status">${badge(c.status)}</dd>
<dt>Tool</dt><dd><code>${c.tool}</code> on the <code>${c.channel}</code> channel</dd>
<dt>Why it was held</dt><dd>${reasonsList(c.reasons)}</dd>
<dt>Asked by</dt><dd>${keyRef(labels, c.requested_by_key)}</dd>
${action?.run_id && html`<dt>Agent run</dt><dd><a href="/dashboard/runs/${action.run_id}#${action.id}"><code>${action.run_id}</code></a></dd>`}
${action && html`<dt>Action</dt><dd><code>${action.id}</code></dd>`}
<dt>Created</dt><dd>${time(c.created)}</dd>
<dt>${c.status === 'pending' ? 'Expires' : 'Expiry'}</dt><dd>${time(c.expires_at)}</dd>
${c.decided_by_key && html`<dt>Decided by</dt><dd id="confirmation-decided-by">${keyRef(labels, c.decided_by_key)} at ${time(c.decided_at)}</dd>`}
${c.result !== null && html`<dt>Result</dt><dd id="confirmation-result">${linkedList(linked, [c.result])}<details><summary>Output</summary>${json(c.result)}</details></dd>`}
</dl>
<details open><summary>Input that will run</summary>${json(c.input)}</details>
</div>
${c.status === 'pending' ? decisionForms(session, c.id, c.requested_by_key) : html``}
<p><a href="/dashboard/confirmations">All approvals</a></p>`;
    return sendPage(
      reply,
      status,
      renderPage(pageContext(deps, request), `Held action ${c.id}`, body, { section: 'confirmations' }),
    );
  };

  app.get<{ Params: { id: string } }>('/confirmations/:id', { config: view }, async (request, reply) => {
    const done = param(request.query, 'done');
    return detail(request, reply, request.params.id, 200, done ? DONE[done] : undefined);
  });

  /** A refused decision shows the confirmation again, with why, in the status of the error. */
  const decideWith = async (
    request: FastifyRequest<{ Params: { id: string } }>,
    reply: FastifyReply,
    run: () => Promise<void>,
    done: string,
  ): Promise<FastifyReply> => {
    const id = request.params.id;
    try {
      await run();
    } catch (error) {
      if (!isAppError(error) || error.status >= 500 || error.code === 'not_found') throw error;
      return detail(
        request,
        reply,
        id,
        error.status,
        notice('bad', html`<span id="decision-error">${error.message}</span>`),
      );
    }
    return reply.redirect(`/dashboard/confirmations/${id}?done=${done}`, 303);
  };

  app.post<{ Params: { id: string } }>('/confirmations/:id/approve', { config: decide }, async (request, reply) =>
    decideWith(
      request,
      reply,
      async () => {
        const result = await approveConfirmation(runtime, deps.tools, sessionOf(request), request.params.id);
        if (result.kind !== 'executed') throw new AppError('conflict', 'The approved action did not execute.');
      },
      'approved',
    ),
  );

  app.post<{ Params: { id: string } }>('/confirmations/:id/reject', { config: decide }, async (request, reply) =>
    decideWith(request, reply, () => rejectConfirmation(runtime, sessionOf(request), request.params.id), 'rejected'),
  );
}

function decisionForms(session: DashboardSession, id: string, requestedBy: string | null): SafeHtml {
  if (!session.scopes.has('approvals')) {
    return notice(
      'info',
      html`Deciding needs a key with the <code>approvals</code> scope. Sign in with one to approve or reject.`,
    );
  }
  const ownRequest =
    requestedBy === session.keyId &&
    notice(
      'warn',
      'You are signed in with the key that asked for this action. Another key with the approvals scope must decide it.',
    );
  return html`${ownRequest}<div class="actions">
<form method="post" action="/dashboard/confirmations/${id}/approve">${csrfField(session)}<button type="submit" class="primary" id="approve">Approve and run</button></form>
<form method="post" action="/dashboard/confirmations/${id}/reject">${csrfField(session)}<button type="submit" class="danger" id="reject">Reject</button></form>
</div>
<p class="muted">Approving runs the input above once, through the same checks as the API (the policy is checked again; only this hold is lifted).</p>`;
}
