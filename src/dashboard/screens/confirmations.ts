import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError, ERROR_CODES, type ErrorCode, isAppError } from '../../core/errors.ts';
import type { Db } from '../../db/database.ts';
import { findActionHeldBy } from '../../db/repositories/agent-actions.ts';
import { findApiKey } from '../../db/repositories/api-keys.ts';
import { findConfirmation, listConfirmationsPage } from '../../db/repositories/confirmations.ts';
import type { ConfirmationRow } from '../../db/tables/money.ts';
import { custodialBalance } from '../../payouts/payouts.ts';
import { approveConfirmation, refusedDecider, rejectConfirmation } from '../../pipeline/approvals.ts';
import { effectiveStatus, presentConfirmation } from '../../policy/confirmations.ts';
import { type DashboardDeps, type DashboardServices, pageContext, sendPage, sessionOf } from '../context.ts';
import { loadKeyLabels } from '../../keys/labels.ts';
import { type LinkedObject, linkedList, loadLinkedObjects } from '../linked.ts';
import type { DashboardSession } from '../sessions.ts';
import {
  badge,
  csrfField,
  keyRef,
  notice,
  pager,
  param,
  renderPage,
  screen,
  select,
  table,
  time,
  usdc,
  withQuery,
} from '../view.ts';

const FILTERS = ['pending', 'executed', 'rejected', 'expired', 'all'] as const;
type Filter = (typeof FILTERS)[number];
const PAGE_SIZE = 50;

/** The held actions in the status asked for (pending by default), newest first. */
async function confirmationsPage(
  services: DashboardServices,
  session: DashboardSession,
  query: unknown,
): Promise<SafeHtml> {
  const requested = param(query, 'status') ?? 'pending';
  if (!FILTERS.includes(requested as Filter)) {
    throw new AppError('invalid_request', `status must be one of ${FILTERS.join(', ')}.`, { param: 'status' });
  }
  const filter = requested as Filter;
  const startingAfter = param(query, 'starting_after');
  const now = services.clock.now();
  const { data: shown, has_more } = await listConfirmationsPage(
    services.db,
    session,
    filter,
    { limit: PAGE_SIZE, starting_after: startingAfter },
    now,
  );
  const labels = await loadKeyLabels(
    services.db,
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
  has_more ? shown.at(-1)?.id : undefined,
)}`;
  return body;
}

/**
 * One held action in a finance reader's words: why it was held, what it would move, whether the
 * balance covers it, what stands in the way of deciding it, and the forms to decide it.
 */
async function heldActionPage(
  deps: DashboardDeps,
  session: DashboardSession,
  row: ConfirmationRow,
  query: unknown,
): Promise<SafeHtml> {
  const { services } = deps;
  const now = services.clock.now();
  const c = presentConfirmation(services.config, row, now);
  const labels = await loadKeyLabels(services.db, session.accountId, [c.requested_by_key, c.decided_by_key]);
  const linked = await loadLinkedObjects(services.db, session, [c.result]);
  const action = await findActionHeldBy(services.db, session.accountId, c.id);
  const money = deps.tools.find((t) => t.name === c.tool)?.effect === 'money';
  const funds =
    c.status === 'pending' && money
      ? fundsFor(
          await custodialBalance(services.db, session),
          PAID_FROM_BALANCE.has(c.tool) ? (action?.amount_settlement_minor ?? null) : null,
        )
      : undefined;
  const blocked = await blockers(services.db, session, row, c.status, funds);
  const sentence = html`${withShortAddresses(c.summary)}${
    typeof c.input['memo'] === 'string' && html` — memo: ${c.input['memo']}`
  } — asked by ${await askerName(services.db, session.accountId, c.requested_by_key)}`;
  const body = html`<h1>Held action <code>${c.id}</code></h1>
${messageOf(query)}
<div class="card">
<p id="confirmation-summary"><strong>${sentence}</strong></p>
<dl class="facts">
<dt>Status</dt><dd id="confirmation-status">${badge(c.status)}</dd>
<dt>Why it was held</dt><dd id="confirmation-reasons">${heldBecause(c.reasons)}</dd>
${inputFacts(c.input)}
<dt>Asked by</dt><dd>${keyRef(labels, c.requested_by_key)} through ${CHANNEL_WORDS[c.channel] ?? c.channel}</dd>
${action?.run_id && html`<dt>Agent run</dt><dd><a href="/dashboard/runs/${action.run_id}#${action.id}"><code>${action.run_id}</code></a></dd>`}
${action && html`<dt>Action</dt><dd><code>${action.id}</code></dd>`}
<dt>Created</dt><dd>${time(c.created)}</dd>
<dt>${c.status === 'pending' ? 'Expires' : 'Expiry'}</dt><dd>${time(c.expires_at)}</dd>
${c.decided_by_key && html`<dt>Decided by</dt><dd id="confirmation-decided-by">${keyRef(labels, c.decided_by_key)} at ${time(c.decided_at)}</dd>`}
${c.result !== null && html`<dt>Result</dt><dd id="confirmation-result">${createdObjects(linked, c.result)}</dd>`}
</dl>
</div>
${funds && fundsCard(funds)}
${decisionForms(session, c.id, blocked)}
<p><a href="/dashboard/confirmations">All approvals</a></p>`;
  return body;
}

export function registerConfirmations(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const view = { dashboard: { scopes: screen('confirmations').scopes } };
  const decide = { dashboard: { scopes: ['approvals'] as const } };

  app.get('/confirmations', { config: view }, async (request, reply) => {
    const body = await confirmationsPage(services, sessionOf(request), request.query);
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), 'Approvals', body, { section: 'confirmations' }),
    );
  });

  const load = async (session: DashboardSession, id: string): Promise<ConfirmationRow> => {
    const row = await findConfirmation(services.db, session, id);
    if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
    return row;
  };

  app.get<{ Params: { id: string } }>('/confirmations/:id', { config: view }, async (request, reply) => {
    const session = sessionOf(request);
    const row = await load(session, request.params.id);
    const body = await heldActionPage(deps, session, row, request.query);
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Held action ${row.id}`, body, { section: 'confirmations' }),
    );
  });

  /**
   * Post-redirect-get, whatever happened: the browser always lands back on the confirmation's
   * page (never on /approve, where a reload would post again), which says what happened and shows
   * the state as it is now: a refusal is named by its error code only, never by a message carried
   * in the URL, so a crafted link cannot put words on the page.
   */
  const decideWith = async (
    request: FastifyRequest<{ Params: { id: string } }>,
    reply: FastifyReply,
    decision: 'approve' | 'reject',
    run: () => Promise<void>,
  ): Promise<FastifyReply> => {
    const page = `/dashboard/confirmations/${encodeURIComponent(request.params.id)}`;
    try {
      await run();
    } catch (error) {
      if (!isAppError(error) || error.status >= 500 || error.code === 'not_found') throw error;
      return reply.redirect(withQuery(page, { failed: decision, code: error.code }), 303);
    }
    return reply.redirect(withQuery(page, { done: decision === 'approve' ? 'approved' : 'rejected' }), 303);
  };

  app.post<{ Params: { id: string } }>('/confirmations/:id/approve', { config: decide }, async (request, reply) =>
    decideWith(request, reply, 'approve', async () => {
      const result = await approveConfirmation(
        services,
        deps.tools,
        { ...sessionOf(request), viaDashboard: true },
        request.params.id,
      );
      if (result.kind !== 'executed') throw new AppError('conflict', 'The approved action did not execute.');
    }),
  );

  app.post<{ Params: { id: string } }>('/confirmations/:id/reject', { config: decide }, async (request, reply) =>
    decideWith(request, reply, 'reject', () =>
      rejectConfirmation(services, { ...sessionOf(request), viaDashboard: true }, request.params.id),
    ),
  );
}

/** Tools whose whole policy amount leaves the custodial balance (a refund's share comes from the payment). */
const PAID_FROM_BALANCE: ReadonlySet<string> = new Set(['create_payout', 'split_revenue']);

const CHANNEL_WORDS: Record<string, string> = {
  api: 'the API',
  agent: 'the agent',
  mcp: 'an assistant over MCP',
  system: 'the service itself',
};

const DONE: Record<string, SafeHtml> = {
  approved: notice('ok', 'Approved: the action ran with its stored input. Its result is below.'),
  rejected: notice('ok', 'Rejected: nothing moved.'),
};

/** What a refused decision's error code means to the person who clicked, in words. */
const REFUSED: Partial<Record<ErrorCode, string>> = {
  insufficient_funds: 'the balance is too low for it (the numbers are below)',
  permission_denied: 'this key may not decide it',
  policy_denied:
    'the account policy refused it when it was checked again (for example, a daily limit reached since it was held)',
  conflict: 'it is no longer pending, or no longer matches the action that was held',
};

function messageOf(query: unknown): SafeHtml | undefined {
  const done = param(query, 'done');
  if (done !== undefined) return DONE[done];
  const failed = param(query, 'failed');
  const code = param(query, 'code');
  if ((failed !== 'approve' && failed !== 'reject') || code === undefined || !Object.hasOwn(ERROR_CODES, code)) {
    return undefined;
  }
  const why = REFUSED[code as ErrorCode] ?? `it could not run (${code}); the action log has the attempt`;
  return notice(
    'bad',
    html`<span id="decision-error">Not ${failed === 'approve' ? 'approved' : 'rejected'}: ${why}. Nothing moved.</span>`,
  );
}

interface Funds {
  availableMinor: bigint;
  /** What running it takes from the balance, when that is known. */
  neededMinor: bigint | null;
  shortfallMinor: bigint;
}

function fundsFor(balance: { availableMinor: bigint }, neededMinor: bigint | null): Funds {
  const short = neededMinor === null ? 0n : neededMinor - balance.availableMinor;
  return { availableMinor: balance.availableMinor, neededMinor, shortfallMinor: short > 0n ? short : 0n };
}

function fundsCard(funds: Funds): SafeHtml {
  return html`<div class="card" id="funds">
<dl class="facts">
<dt>Available balance</dt><dd id="available-balance">${usdc(funds.availableMinor)}</dd>
${funds.neededMinor !== null && html`<dt>This action takes</dt><dd id="needed-amount">${usdc(funds.neededMinor)}</dd>`}
${
  funds.shortfallMinor > 0n
    ? html`<dt>Short by</dt><dd id="shortfall"><strong>${usdc(funds.shortfallMinor)}</strong></dd>`
    : funds.neededMinor !== null &&
      html`<dt>Left after it runs</dt><dd>${usdc(funds.availableMinor - funds.neededMinor)}</dd>`
}
</dl>
</div>`;
}

/** Why approving (and rejecting) cannot happen now, in words; empty lists when they can. */
interface Blockers {
  canDecide: boolean;
  approve: string[];
  reject: string[];
}

async function blockers(
  db: Db,
  session: DashboardSession,
  row: ConfirmationRow,
  status: ConfirmationRow['status'],
  funds: Funds | undefined,
): Promise<Blockers> {
  const both: string[] = [];
  if (status === 'executed') both.push('It has already been approved, and it ran.');
  if (status === 'rejected') both.push('It has already been rejected.');
  if (status === 'expired') both.push('It expired without a decision. Ask for it again if it is still wanted.');
  if (await keyMayNotDecide(db, session, row)) {
    both.push(
      'You are signed in with the key that asked for this action, or a key in its lineage (rotated from or into it, or created by it). Another person, signed in with their own key with the approvals scope, must decide it.',
    );
  }
  const approve = [...both];
  if (funds && funds.shortfallMinor > 0n) {
    approve.push(
      `The balance is too low: it is ${usdc(funds.shortfallMinor)} short. Add funds to the balance, then approve.`,
    );
  }
  return { canDecide: session.scopes.has('approvals'), approve, reject: both };
}

/** Whether policy/approvals.ts would refuse this session's key as the decider, on the dashboard. */
async function keyMayNotDecide(db: Db, session: DashboardSession, row: ConfirmationRow): Promise<boolean> {
  return (await refusedDecider(db, row, { ...session, viaDashboard: true })) !== undefined;
}

function decisionForms(session: DashboardSession, id: string, blocked: Blockers): SafeHtml {
  if (!blocked.canDecide) {
    return notice(
      'info',
      html`Deciding needs a key with the <code>approvals</code> scope. Sign in with one to approve or reject.`,
    );
  }
  const reasons = (list: string[], listId: string): SafeHtml =>
    list.length === 0 ? html`` : html`<ul class="reasons" id="${listId}">${list.map((r) => html`<li>${r}</li>`)}</ul>`;
  const approveBlocked = blocked.approve.length > 0;
  const rejectBlocked = blocked.reject.length > 0;
  return html`<div class="actions">
<form method="post" action="/dashboard/confirmations/${id}/approve">${csrfField(session)}<button type="submit" class="primary" id="approve"${
    approveBlocked && html` disabled aria-describedby="approve-blocked"`
  }>Approve and run</button></form>
<form method="post" action="/dashboard/confirmations/${id}/reject">${csrfField(session)}<button type="submit" class="danger" id="reject"${
    rejectBlocked && html` disabled`
  }>Reject</button></form>
</div>
${approveBlocked && html`<p>Approve is not available:</p>${reasons(blocked.approve, 'approve-blocked')}`}
<p class="muted">Approving runs the action above once, through the same checks as the API (the policy is checked again; only this hold is lifted).</p>`;
}

/** The reasons that held it (the rules it passed are not why it waits). */
function heldBecause(reasons: readonly { rule: string; outcome: string; reason: string }[]): SafeHtml {
  const holding = reasons.filter((r) => r.outcome !== 'allow');
  if (holding.length === 0) return html`<span class="muted">No reason was recorded.</span>`;
  return html`<ul class="reasons">${holding.map((r) => html`<li>${r.reason}</li>`)}</ul>`;
}

const ADDRESS = /0x[0-9a-fA-F]{40}/g;

/** A sentence with each address shortened for reading (0x52a1…0EE7), the full one in its tooltip. */
function withShortAddresses(text: string): SafeHtml {
  const parts: SafeHtml[] = [];
  let at = 0;
  for (const match of text.matchAll(ADDRESS)) {
    const address = match[0];
    parts.push(
      html`${text.slice(at, match.index)}<span class="address" title="${address}">${address.slice(0, 6)}…${address.slice(-4)}</span>`,
    );
    at = match.index + address.length;
  }
  return html`${parts}${text.slice(at)}`;
}

/**
 * The stored input, field by field in words (the full recipient address included, for checking
 * against the request). The amount is left out: the sentence above states it, formatted.
 */
function inputFacts(input: Record<string, unknown>): SafeHtml[] {
  const rows: SafeHtml[] = [];
  const visit = (label: string, key: string, value: unknown): void => {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) visit(`${label} ${i + 1}`, key, item);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) visit(`${label}, ${words(k)}`, k, v);
    } else if (key === 'share_bps' && typeof value === 'number') {
      rows.push(html`<dt>${label}</dt><dd>${value / 100}%</dd>`);
    } else {
      rows.push(html`<dt>${label}</dt><dd>${String(value)}</dd>`);
    }
  };
  for (const [key, value] of Object.entries(input)) {
    if (key !== 'amount') visit(capitalised(words(key)), key, value);
  }
  return rows;
}

/** Field names a finance person reads differently from the API's. */
const FIELD_WORDS: Record<string, string> = {
  to_address: 'recipient',
  payment_id: 'payment',
  share_bps: 'share',
  share_parts: 'share (parts)',
};

function words(key: string): string {
  return FIELD_WORDS[key] ?? key.replaceAll('_', ' ');
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** What the executed action created: payouts and payments with their state, else its kind and id. */
function createdObjects(linked: Map<string, LinkedObject>, result: unknown): SafeHtml {
  const list = linkedList(linked, [result]);
  if (list.value !== '') return list;
  const made = result as { id?: unknown; object?: unknown } | null;
  return typeof made?.id === 'string'
    ? html`${typeof made.object === 'string' ? words(made.object) : 'Object'} <code>${made.id}</code>`
    : html`<span class="muted">Nothing was created.</span>`;
}

/** Who asked, as a person reads it: the key's name, else its redacted secret. */
async function askerName(db: Db, accountId: string, keyId: string | null): Promise<string> {
  if (keyId === null) return 'no recorded requester';
  // Either mode's key: the confirmation names the key that asked, whichever it was.
  const key = await findApiKey(db, { accountId }, keyId);
  if (!key) return keyId;
  return key.name ?? `${key.display_prefix}…${key.last4}`;
}
