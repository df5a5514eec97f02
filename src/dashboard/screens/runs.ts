import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type AgentRunView, expireUnansweredRuns, loadRunView } from '../../agent/runtime.ts';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { parseInput } from '../../core/validation.ts';
import { findAgentRun, listRunsPage } from '../../db/repositories/agent-runs.ts';
import { currentRunStatuses } from '../run-status.ts';
import { type DashboardDeps, type DashboardServices, pageContext, sendPage, sessionOf } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { loadKeyLabels } from '../../keys/labels.ts';
import { linkedList, loadLinkedObjects } from '../linked.ts';
import {
  badge,
  json,
  keyRef,
  maybe,
  pager,
  param,
  reasonsList,
  renderPage,
  screen,
  select,
  table,
  time,
} from '../view.ts';

const RUN_STATUSES = [
  'running',
  'completed',
  'confirmation_required',
  'rejected',
  'failed',
  'needs_input',
  'cancelled',
  'expired',
] as const;
const PAGE_SIZE = 25;

const runsFilter = z.object({
  status: z.enum(RUN_STATUSES, { error: `status must be one of ${RUN_STATUSES.join(', ')}` }).optional(),
  starting_after: z.string().max(100).optional(),
});

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The agent runs in the session's mode, newest first, filtered by status. */
async function runsPage(services: DashboardServices, session: DashboardSession, query: unknown): Promise<SafeHtml> {
  const filters = { status: param(query, 'status'), starting_after: param(query, 'starting_after') };
  const filter = parseInput(runsFilter, filters);
  // A question nobody answered in time is shown as what it is now: expired.
  await expireUnansweredRuns(services, session);
  const { data: shown, has_more } = await listRunsPage(
    services.db,
    session,
    { status: filter.status },
    { limit: PAGE_SIZE, starting_after: filter.starting_after },
  );
  const labels = await loadKeyLabels(
    services.db,
    session.accountId,
    shown.map((r) => r.key_id),
  );
  const current = await currentRunStatuses(services.db, session, shown, services.clock.now());
  const body = html`<h1>Agent runs</h1>
<form class="filters" method="get" action="/dashboard/runs">
${select('status', 'Status', RUN_STATUSES, filter.status)}
<button type="submit">Filter</button> <a href="/dashboard/runs">Clear</a>
</form>
${table(
  ['Run', 'Created', 'Status', 'Instruction', 'Model', 'Key'],
  shown.map(
    (run) => html`<tr data-run-id="${run.id}">
<td><a href="/dashboard/runs/${run.id}"><code>${run.id}</code></a>${run.dry_run && html` <span class="badge">dry run</span>`}</td>
<td>${time(run.created_at)}</td>
<td>${badge(current.get(run.id) ?? run.status)}</td>
<td>${shorten(run.instruction, 140)}</td>
<td><code>${run.model}</code></td>
<td>${keyRef(labels, run.key_id, true)}</td>
</tr>`,
  ),
  'No agent runs match.',
  'runs',
)}
${pager('/dashboard/runs', filters, has_more ? shown.at(-1)?.id : undefined)}`;
  return body;
}

/** One run: the instruction, its conversation, every step with its decision and result, what it holds. */
async function runPage(services: DashboardServices, session: DashboardSession, view: AgentRunView): Promise<SafeHtml> {
  // loadRunView has found the run among the session's own: it is there.
  const row = (await findAgentRun(services.db, session, view.run_id))!;
  const labels = await loadKeyLabels(services.db, session.accountId, [
    row.key_id,
    ...view.actions.map((a) => a.approved_by_key),
  ]);
  const linked = await loadLinkedObjects(
    services.db,
    session,
    view.actions.map((a) => a.result),
  );
  const status =
    (await currentRunStatuses(services.db, session, [{ id: row.id, status: view.status }], services.clock.now())).get(
      row.id,
    ) ?? view.status;
  const body = html`<h1>Agent run <code>${view.run_id}</code></h1>
<div class="card">
<dl class="facts">
<dt>Instruction</dt><dd id="run-instruction">${view.instruction}</dd>
<dt>Status</dt><dd id="run-status">${badge(status)}${view.dry_run && html` <span class="badge">dry run</span>`}</dd>
<dt>Reply</dt><dd>${maybe(view.reply)}</dd>
<dt>Model</dt><dd><code>${view.model}</code></dd>
<dt>Asked by</dt><dd>${keyRef(labels, row.key_id)} on the <code>${row.channel}</code> channel</dd>
<dt>Tool calls</dt><dd>${row.steps}</dd>
<dt>Started</dt><dd>${time(view.created)}</dd>
<dt>Finished</dt><dd>${time(row.finished_at)}</dd>
${view.usage !== null && html`<dt>Tokens</dt><dd><code>${JSON.stringify(view.usage)}</code></dd>`}
${view.question !== null && html`<dt>Waits for an answer until</dt><dd>${time(view.question.answer_by)}</dd>`}
</dl>
</div>
${
  view.conversation.length > 1 &&
  html`<h2>Conversation</h2>
<ol class="steps" id="run-conversation">${view.conversation.map(
    (turn) =>
      html`<li class="card"><p><strong>${turn.role === 'merchant' ? 'Merchant' : 'Agent'}</strong> <span class="muted">${time(turn.created)}</span></p><p>${turn.text}</p></li>`,
  )}</ol>`
}
<h2>Steps</h2>
${
  view.actions.length === 0
    ? html`<p class="muted">The run made no tool calls.</p>`
    : html`<ol class="steps" id="run-steps">${view.actions.map(
        (
          action,
        ) => html`<li class="card step" id="${action.id}" data-action-id="${action.id}" data-status="${action.status}">
<p><strong><code>${action.tool}</code></strong> ${badge(action.status)} <span class="muted">${time(action.created)} · <a href="/dashboard/actions/${action.id}"><code>${action.id}</code></a></span></p>
<dl class="facts">
<dt>Decision</dt><dd>${badge(action.decision.outcome)}${reasonsList(action.decision.reasons)}</dd>
${
  action.confirmation_id &&
  html`<dt>Confirmation</dt><dd><a href="/dashboard/confirmations/${action.confirmation_id}"><code>${action.confirmation_id}</code></a></dd>`
}
${action.approved_by_key && html`<dt>Decided by</dt><dd class="approver">${keyRef(labels, action.approved_by_key)}</dd>`}
${action.result !== null && html`<dt>Result</dt><dd>${linkedList(linked, [action.result])}<details><summary>Output</summary>${json(action.result)}</details></dd>`}
${action.error !== null && html`<dt>Error</dt><dd>${json(action.error)}</dd>`}
</dl>
<details><summary>Input</summary>${json(action.input)}</details>
</li>`,
      )}</ol>`
}
${
  view.confirmations.length > 0 &&
  html`<h2>Held for approval</h2><ul>${view.confirmations.map(
    (c) =>
      html`<li><a href="/dashboard/confirmations/${c.id}"><code>${c.id}</code></a>: ${c.summary} <span class="muted">(expires ${time(c.expires_at)})</span></li>`,
  )}</ul>`
}`;
  return body;
}

export function registerRuns(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('runs').scopes } };

  app.get('/runs', { config: access }, async (request, reply) => {
    const body = await runsPage(services, sessionOf(request), request.query);
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Agent runs', body, { section: 'runs' }));
  });

  app.get<{ Params: { id: string } }>('/runs/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const view = await loadRunView(services, session, request.params.id);
    const body = await runPage(services, session, view);
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Run ${view.run_id}`, body, { section: 'runs' }),
    );
  });
}
