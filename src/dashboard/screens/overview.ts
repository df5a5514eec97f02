import type { FastifyInstance } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { listRecentRuns } from '../../db/repositories/agent-runs.ts';
import { countPendingConfirmations } from '../../db/repositories/confirmations.ts';
import { custodialBalance } from '../../payouts/payouts.ts';
import { currentRunStatuses } from '../run-status.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import { allows, badge, renderPage, SCREENS, screen, table, time, usdc } from '../view.ts';

const RECENT_RUNS = 5;

export function registerOverview(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;

  app.get('/', async (request, reply) => {
    const session = sessionOf(request);
    const now = services.clock.now();
    const cards: SafeHtml[] = [];
    if (allows(session, screen('confirmations').scopes)) {
      const pending = await countPendingConfirmations(services.db, session, now);
      cards.push(
        html`<div class="card"><p class="muted">Waiting for approval</p><p class="stat" id="pending-count">${pending}</p><p><a href="/dashboard/confirmations">Review held actions</a></p></div>`,
      );
    }
    if (session.scopes.has('payments:read')) {
      const balance = await custodialBalance(services.db, session);
      cards.push(
        html`<div class="card"><p class="muted">Available balance</p><p class="stat">${usdc(balance.availableMinor)}</p><p class="muted">${usdc(balance.pendingPayoutsMinor)} in queued payouts</p></div>`,
      );
    }

    let recent = html``;
    if (allows(session, screen('runs').scopes)) {
      const runs = await listRecentRuns(services.db, session, RECENT_RUNS);
      const current = await currentRunStatuses(services.db, session, runs, services.clock.now());
      recent = html`<h2>Recent agent runs</h2>
${table(
  ['Run', 'Created', 'Status', 'Instruction'],
  runs.map(
    (run) =>
      html`<tr><td><a href="/dashboard/runs/${run.id}"><code>${run.id}</code></a></td><td>${time(run.created_at)}</td><td>${badge(current.get(run.id) ?? run.status)}</td><td>${run.instruction.length > 120 ? `${run.instruction.slice(0, 119)}…` : run.instruction}</td></tr>`,
  ),
  'No agent runs yet.',
  'recent-runs',
)}
<p><a href="/dashboard/runs">All runs</a></p>`;
    }

    const body = html`<h1>Overview</h1>
${cards.length > 0 && html`<div class="grid">${cards}</div>`}
${recent}
<h2>What this key can do</h2>
<p>Signed in with <code>${session.keyLabel.redacted}</code>${session.keyLabel.name && html` (${session.keyLabel.name})`} in ${
      session.livemode ? 'live' : 'test'
    } mode, with the scopes ${[...session.scopes].map((s) => html`<code>${s}</code> `)}. The session ends at ${time(session.expiresAt)} at the latest.</p>
${table(
  ['Screen', 'Open with this key', 'Needs one of', 'What it is for'],
  SCREENS.filter((s) => s.section !== 'overview').map((s) => {
    const open = allows(session, s.scopes);
    return html`<tr data-screen="${s.section}"><td>${open ? html`<a href="${s.path}">${s.label}</a>` : s.label}</td><td>${
      open ? badge('yes') : html`<span class="badge">no</span>`
    }</td><td>${s.scopes.map((scope) => html`<code>${scope}</code> `)}</td><td>${s.purpose}</td></tr>`;
  }),
  '',
  'capabilities',
)}
<p class="muted">Approving or rejecting a held action needs the <code>approvals</code> scope, and the key that asked for the action cannot decide it.${
      session.scopes.has('approvals') ? ' This key can approve.' : ' This key cannot approve.'
    }</p>`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Overview', body, { section: 'overview' }));
  });
}
