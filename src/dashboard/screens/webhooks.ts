import type { FastifyInstance } from 'fastify';
import { html } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import {
  findEventWithDelivery,
  listAttempts,
  listEventsWithDelivery,
  requestRedelivery,
} from '../../db/repositories/webhook-deliveries.ts';
import { presentAttempt, presentDelivery, presentEvent } from '../../webhooks/events.ts';
import { type DashboardDeps, pageContext, sendPage, sessionOf } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { badge, csrfField, json, maybe, notice, pager, param, renderPage, screen, table, time } from '../view.ts';

const PAGE_SIZE = 50;

export function registerWebhooks(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime } = deps;
  const access = { dashboard: { scopes: screen('webhooks').scopes } };

  const ownedEvent = async (session: DashboardSession, id: string) => {
    const found = await findEventWithDelivery(runtime.db, session, id);
    if (!found) throw new AppError('not_found', `No such event: '${id}'.`, { param: 'id' });
    return found;
  };

  app.get('/webhooks', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const type = param(request.query, 'type');
    const objectId = param(request.query, 'object_id');
    const startingAfter = param(request.query, 'starting_after');
    let after: { createdAt: Date; id: string } | undefined;
    if (startingAfter) {
      const cursor = await ownedEvent(session, startingAfter);
      after = { createdAt: cursor.event.created_at, id: cursor.event.id };
    }
    const rows = await listEventsWithDelivery(runtime.db, {
      accountId: session.accountId,
      livemode: session.livemode,
      type,
      objectId,
      after,
      limit: PAGE_SIZE + 1,
    });
    const shown = rows.slice(0, PAGE_SIZE);
    const body = html`<h1>Webhooks</h1>
<p class="muted">Events of this account and mode, newest first, with their delivery. Events without a webhook URL are recorded only. The signing secret is on the <a href="/dashboard/developers">developer screen</a>.</p>
<form class="filters" method="get" action="/dashboard/webhooks">
<label>Type<input type="text" name="type" value="${type ?? ''}" placeholder="payment.settled" maxlength="100"></label>
<label>Object<input type="text" name="object_id" value="${objectId ?? ''}" placeholder="pay_… or po_…" maxlength="100"></label>
<button type="submit">Filter</button> <a href="/dashboard/webhooks">Clear</a>
</form>
${table(
  ['Event', 'Created', 'Type', 'Object', 'Delivery', 'Attempts', 'Last attempt'],
  shown.map(({ event, delivery }) => {
    const d = presentDelivery(delivery);
    return html`<tr data-event-id="${event.id}">
<td><a href="/dashboard/webhooks/events/${event.id}"><code>${event.id}</code></a></td>
<td>${time(event.created_at)}</td>
<td><code>${event.type}</code></td>
<td>${event.object_id ? html`<code>${event.object_id}</code>` : maybe(null)}</td>
<td>${d ? badge(d.status) : html`<span class="muted">recorded only</span>`}</td>
<td class="num">${d ? d.attempts : ''}</td>
<td>${time(d?.last_attempt_at)}</td>
</tr>`;
  }),
  'No events match.',
  'events',
)}
${pager('/dashboard/webhooks', { type, object_id: objectId, starting_after: startingAfter }, rows.length > PAGE_SIZE ? shown.at(-1)?.event.id : undefined)}`;
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Webhooks', body, { section: 'webhooks' }));
  });

  app.get<{ Params: { id: string } }>('/webhooks/events/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const found = await ownedEvent(session, request.params.id);
    const event = presentEvent(found.event, found.delivery);
    const now = runtime.clock.now();
    const attempts = (await listAttempts(runtime.db, found.event.id)).map((a) =>
      presentAttempt(a, found.delivery, now),
    );
    const d = event.delivery;
    const body = html`<h1>Event <code>${event.id}</code></h1>
${param(request.query, 'done') === 'redeliver' && notice('ok', 'Queued for redelivery: the worker sends it again shortly, with the same event id.')}
<div class="card"><dl class="facts">
<dt>Type</dt><dd><code>${event.type}</code></dd>
<dt>Object</dt><dd>${maybe(event.object_id)}</dd>
<dt>Created</dt><dd>${time(event.created)}</dd>
<dt>Webhook URL</dt><dd>${event.webhook_url ? html`<code>${event.webhook_url}</code>` : html`<span class="muted">none: recorded only</span>`}</dd>
<dt>Delivery</dt><dd id="delivery-status">${d ? badge(d.status) : maybe(null)}${
      d?.next_attempt_at && html` <span class="muted">next attempt ${time(d.next_attempt_at)}</span>`
    }</dd>
</dl>
<details><summary>Body (as delivered)</summary>${json({ id: event.id, type: event.type, created: event.created, livemode: event.livemode, data: event.data })}</details>
</div>
${
  event.webhook_url &&
  html`<form method="post" action="/dashboard/webhooks/events/${event.id}/redeliver" class="actions">${csrfField(session)}<button type="submit" id="redeliver">Redeliver</button>
<span class="muted">Sends the event again now (same id, so receivers still deduplicate).</span></form>`
}
<h2>Delivery attempts</h2>
${table(
  ['#', 'Started', 'Trigger', 'Status', 'HTTP', 'Latency', 'Error', 'Response'],
  attempts.map(
    (a) => html`<tr>
<td class="num">${a.attempt}</td>
<td>${time(a.created)}</td>
<td>${a.trigger}</td>
<td>${badge(a.status)}</td>
<td class="num">${maybe(a.response_status)}</td>
<td class="num">${a.latency_ms === null ? maybe(null) : `${a.latency_ms} ms`}</td>
<td>${a.error ? html`<code>${a.error.code}</code> ${a.error.message}` : maybe(null)}</td>
<td>${a.response_excerpt ? html`<code>${a.response_excerpt}</code>` : maybe(null)}</td>
</tr>`,
  ),
  'No attempts yet.',
  'attempts',
)}
<p><a href="/dashboard/webhooks">All events</a></p>`;
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Event ${event.id}`, body, { section: 'webhooks' }),
    );
  });

  app.post<{ Params: { id: string } }>('/webhooks/events/:id/redeliver', { config: access }, async (request, reply) => {
    const found = await ownedEvent(sessionOf(request), request.params.id);
    if (found.event.webhook_url === null) {
      throw new AppError(
        'invalid_request',
        `Event '${found.event.id}' has no webhook URL: it was recorded only, so there is nowhere to deliver it.`,
      );
    }
    await requestRedelivery(runtime.db, found.event.id, runtime.clock.now());
    return reply.redirect(`/dashboard/webhooks/events/${found.event.id}?done=redeliver`, 303);
  });
}
