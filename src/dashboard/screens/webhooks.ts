import type { FastifyInstance } from 'fastify';
import { html, type SafeHtml } from '../../checkout/html.ts';
import { AppError } from '../../core/errors.ts';
import { parseInput } from '../../core/validation.ts';
import {
  type EventWithDeliveries,
  findEventWithDeliveries,
  listAttempts,
  listEventsWithDeliveriesPage,
  requestRedelivery,
} from '../../db/repositories/webhook-deliveries.ts';
import {
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  updateWebhookEndpoint,
} from '../../db/repositories/webhook-endpoints.ts';
import {
  assertEndpointUrl,
  createWebhookEndpoint,
  enabledEventsSchema,
  endpointDescriptionSchema,
  endpointUrlSchema,
  MAX_WEBHOOK_ENDPOINTS,
} from '../../webhooks/endpoints.ts';
import { ALL_EVENT_TYPES, describeEventType, EVENT_TYPES } from '../../webhooks/event-types.ts';
import { presentAttempt, presentDelivery, presentEvent } from '../../webhooks/events.ts';
import { type DashboardDeps, type DashboardServices, formOf, pageContext, sendPage, sessionOf } from '../context.ts';
import type { DashboardSession } from '../sessions.ts';
import { badge, csrfField, json, maybe, notice, pager, param, renderPage, screen, table, time } from '../view.ts';

const PAGE_SIZE = 50;

const DONE: Record<string, string> = {
  'endpoint-deleted': 'The endpoint was deleted. It receives nothing more; deliveries not yet made to it are dropped.',
  'endpoint-disabled': 'The endpoint was disabled. It receives nothing until you enable it again.',
  'endpoint-enabled': 'The endpoint was enabled. It receives events written from now on.',
};

/** The add-endpoint form, parsed with the API's own schemas so both refuse the same things. */
function readEndpointForm(form: URLSearchParams): { url: string; enabledEvents: string[]; description: string | null } {
  const url = parseInput(endpointUrlSchema, param(form, 'url') ?? '', { paramPrefix: 'url' });
  const enabledEvents = parseInput(enabledEventsSchema, form.getAll('enabled_events'), {
    paramPrefix: 'enabled_events',
  });
  const description = param(form, 'description');
  if (description !== undefined) parseInput(endpointDescriptionSchema, description, { paramPrefix: 'description' });
  return { url, enabledEvents, description: description ?? null };
}

function endpointsSection(
  session: DashboardSession,
  endpoints: Awaited<ReturnType<typeof listWebhookEndpoints>>,
): SafeHtml {
  return html`<h2 id="endpoints">Endpoints</h2>
<p class="muted">URLs that receive this account's ${session.livemode ? 'live' : 'test'}-mode events of the types they choose, each signed with the endpoint's own secret (Standard Webhooks). A payment's own <code>webhook_url</code> still receives that payment's events.</p>
${table(
  ['Endpoint', 'URL', 'Events', 'Status', 'Created', ''],
  endpoints.map(
    (e) => html`<tr data-endpoint-id="${e.id}">
<td><code>${e.id}</code>${e.description && html`<br><span class="muted">${e.description}</span>`}</td>
<td><code>${e.url}</code></td>
<td>${e.enabled_events.map((t) => html`<code>${t}</code> `)}</td>
<td>${badge(e.disabled ? 'disabled' : 'active')}</td>
<td>${time(e.created_at)}</td>
<td><form method="post" action="/dashboard/webhooks/endpoints/${e.id}/${e.disabled ? 'enable' : 'disable'}" class="inline">${csrfField(session)}<button type="submit">${e.disabled ? 'Enable' : 'Disable'}</button></form>
<form method="post" action="/dashboard/webhooks/endpoints/${e.id}/delete" class="inline">${csrfField(session)}<button type="submit" class="danger">Delete</button></form></td>
</tr>`,
  ),
  'No endpoints yet.',
  'endpoints-table',
)}
${
  endpoints.length < MAX_WEBHOOK_ENDPOINTS
    ? html`<form method="post" action="/dashboard/webhooks/endpoints" class="card" id="add-endpoint">
${csrfField(session)}
<div class="field"><label for="endpoint-url">URL</label><input type="url" class="wide" id="endpoint-url" name="url" required maxlength="2048" placeholder="https://finance.example/hooks/plainpay"></div>
<div class="field"><label for="endpoint-description">Description</label><input type="text" class="wide" id="endpoint-description" name="description" maxlength="200" placeholder="e.g. approvals to the finance channel"></div>
<fieldset><legend>Events</legend>
<label><input type="checkbox" name="enabled_events" value="${ALL_EVENT_TYPES}"> <strong>All events</strong>, also types added later</label>
${EVENT_TYPES.map(
  (type) =>
    html`<label><input type="checkbox" name="enabled_events" value="${type}"> <code>${type}</code> <span class="muted">${describeEventType(type)}</span></label>`,
)}
</fieldset>
<button type="submit" class="primary">Add endpoint</button>
</form>`
    : html`<p class="muted">This mode has ${MAX_WEBHOOK_ENDPOINTS} endpoints, the most it can have: delete one to add another.</p>`
}`;
}

/** The account's endpoints and its events, newest first, filtered by type or object. */
async function eventsPage(services: DashboardServices, session: DashboardSession, query: unknown): Promise<SafeHtml> {
  const type = param(query, 'type');
  const objectId = param(query, 'object_id');
  const startingAfter = param(query, 'starting_after');
  const { data: shown, has_more } = await listEventsWithDeliveriesPage(
    services.db,
    session,
    { type, objectId },
    { limit: PAGE_SIZE, starting_after: startingAfter },
  );
  const endpoints = await listWebhookEndpoints(services.db, session, { limit: MAX_WEBHOOK_ENDPOINTS });
  const done = param(query, 'done');
  const body = html`<h1>Webhooks</h1>
${done && DONE[done] && notice('ok', DONE[done])}
${endpointsSection(session, endpoints)}
<h2 id="events">Events</h2>
<p class="muted">Events of this account and mode, newest first, with their delivery. Events without a target are recorded only. The signing secret of payments' webhook URLs is on the <a href="/dashboard/developers">developer screen</a>.</p>
<form class="filters" method="get" action="/dashboard/webhooks">
<label>Type<input type="text" name="type" value="${type ?? ''}" placeholder="payment.settled" maxlength="100"></label>
<label>Object<input type="text" name="object_id" value="${objectId ?? ''}" placeholder="pay_… or po_…" maxlength="100"></label>
<button type="submit">Filter</button> <a href="/dashboard/webhooks">Clear</a>
</form>
${table(
  ['Event', 'Created', 'Type', 'Object', 'Delivery', 'Attempts', 'Last attempt', 'Endpoints'],
  shown.map(({ event, deliveries }) => {
    const d = presentDelivery(deliveries.find((row) => row.endpoint_id === null));
    const toEndpoints = deliveries.filter((row) => row.endpoint_id !== null);
    return html`<tr data-event-id="${event.id}">
<td><a href="/dashboard/webhooks/events/${event.id}"><code>${event.id}</code></a></td>
<td>${time(event.created_at)}</td>
<td><code>${event.type}</code></td>
<td>${event.object_id ? html`<code>${event.object_id}</code>` : maybe(null)}</td>
<td>${d ? badge(d.status) : html`<span class="muted">no webhook URL</span>`}</td>
<td class="num">${d ? d.attempts : ''}</td>
<td>${time(d?.last_attempt_at)}</td>
<td>${toEndpoints.length === 0 ? maybe(null) : toEndpoints.map((row) => html`${badge(row.status)} `)}</td>
</tr>`;
  }),
  'No events match.',
  'events',
)}
${pager('/dashboard/webhooks', { type, object_id: objectId, starting_after: startingAfter }, has_more ? shown.at(-1)?.event.id : undefined)}`;
  return body;
}

/** One event: its body, its deliveries and every attempt, and the form to deliver it again. */
async function eventPage(
  services: DashboardServices,
  session: DashboardSession,
  found: EventWithDeliveries,
  redelivered: boolean,
): Promise<SafeHtml> {
  const event = presentEvent(found.event, found.deliveries);
  const now = services.clock.now();
  const attempts = (await listAttempts(services.db, found.event.id)).map((a) =>
    presentAttempt(a, found.deliveries, now),
  );
  const d = event.delivery;
  const body = html`<h1>Event <code>${event.id}</code></h1>
${redelivered && notice('ok', 'Queued for redelivery: the worker sends it again shortly, with the same event id.')}
<div class="card"><dl class="facts">
<dt>Type</dt><dd><code>${event.type}</code></dd>
<dt>Object</dt><dd>${maybe(event.object_id)}</dd>
<dt>Created</dt><dd>${time(event.created)}</dd>
<dt>Webhook URL</dt><dd>${event.webhook_url ? html`<code>${event.webhook_url}</code>` : html`<span class="muted">none</span>`}</dd>
<dt>Delivery</dt><dd id="delivery-status">${d ? badge(d.status) : maybe(null)}${
    d?.next_attempt_at && html` <span class="muted">next attempt ${time(d.next_attempt_at)}</span>`
  }</dd>
${event.endpoint_deliveries.map(
  (e) =>
    html`<dt>Endpoint <code>${e.endpoint_id}</code></dt><dd>${badge(e.status)}${
      e.next_attempt_at && html` <span class="muted">next attempt ${time(e.next_attempt_at)}</span>`
    }</dd>`,
)}
</dl>
<details><summary>Body (as delivered)</summary>${json({ id: event.id, type: event.type, created: event.created, livemode: event.livemode, data: event.data })}</details>
</div>
${
  found.deliveries.length > 0 &&
  html`<form method="post" action="/dashboard/webhooks/events/${event.id}/redeliver" class="actions">${csrfField(session)}<button type="submit" id="redeliver">Redeliver</button>
<span class="muted">Sends the event again now (same id, so receivers still deduplicate).</span></form>`
}
<h2>Delivery attempts</h2>
${table(
  ['Target', '#', 'Started', 'Trigger', 'Status', 'HTTP', 'Latency', 'Error', 'Response'],
  attempts.map(
    (a) => html`<tr>
<td>${a.endpoint_id ? html`<code>${a.endpoint_id}</code>` : 'webhook URL'}</td>
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
  return body;
}

export function registerWebhooks(app: FastifyInstance, deps: DashboardDeps): void {
  const { services } = deps;
  const access = { dashboard: { scopes: screen('webhooks').scopes } };

  const ownedEvent = async (session: DashboardSession, id: string) => {
    const found = await findEventWithDeliveries(services.db, session, id);
    if (!found) throw new AppError('not_found', `No such event: '${id}'.`, { param: 'id' });
    return found;
  };

  app.get('/webhooks', { config: access }, async (request, reply) => {
    const body = await eventsPage(services, sessionOf(request), request.query);
    return sendPage(reply, 200, renderPage(pageContext(deps, request), 'Webhooks', body, { section: 'webhooks' }));
  });

  app.get<{ Params: { id: string } }>('/webhooks/events/:id', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const found = await ownedEvent(session, request.params.id);
    const body = await eventPage(services, session, found, param(request.query, 'done') === 'redeliver');
    return sendPage(
      reply,
      200,
      renderPage(pageContext(deps, request), `Event ${found.event.id}`, body, { section: 'webhooks' }),
    );
  });

  app.post<{ Params: { id: string } }>('/webhooks/events/:id/redeliver', { config: access }, async (request, reply) => {
    const found = await ownedEvent(sessionOf(request), request.params.id);
    if (found.deliveries.length === 0) {
      throw new AppError(
        'invalid_request',
        `Event '${found.event.id}' has no webhook URL and no endpoint received it: it was recorded only, so there is nowhere to deliver it.`,
      );
    }
    await requestRedelivery(services.db, found.event.id, services.clock.now());
    return reply.redirect(`/dashboard/webhooks/events/${found.event.id}?done=redeliver`, 303);
  });

  app.post('/webhooks/endpoints', { config: access }, async (request, reply) => {
    const session = sessionOf(request);
    const input = readEndpointForm(formOf(request));
    await assertEndpointUrl(input.url, { allowPrivate: services.config.webhookAllowPrivate });
    const created = await services.db.transaction().execute((trx) =>
      createWebhookEndpoint(trx, services.secretBox, {
        accountId: session.accountId,
        livemode: session.livemode,
        ...input,
        disabled: false,
        now: services.clock.now(),
      }),
    );
    const body = html`<h1>Endpoint added</h1>
${notice('warn', html`<strong>Copy the signing secret now.</strong> It is shown this once; verify this endpoint's deliveries with it.`)}
<div class="card">
<code class="secret" id="new-endpoint-secret">${created.secret}</code>
<dl class="facts">
<dt>Endpoint</dt><dd><code id="new-endpoint-id">${created.id}</code></dd>
<dt>URL</dt><dd><code>${created.url}</code></dd>
<dt>Events</dt><dd>${created.enabled_events.map((t) => html`<code>${t}</code> `)}</dd>
<dt>Mode</dt><dd>${created.livemode ? 'live' : 'test'}</dd>
</dl>
</div>
<p><a href="/dashboard/webhooks#endpoints">Back to webhooks</a></p>`;
    return sendPage(
      reply,
      201,
      renderPage(pageContext(deps, request), 'Endpoint added', body, { section: 'webhooks' }),
    );
  });

  for (const [action, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    app.post<{ Params: { id: string } }>(
      `/webhooks/endpoints/:id/${action}`,
      { config: access },
      async (request, reply) => {
        const updated = await updateWebhookEndpoint(
          services.db,
          sessionOf(request),
          request.params.id,
          { disabled },
          services.clock.now(),
        );
        if (!updated) throw new AppError('not_found', `No such webhook endpoint: '${request.params.id}'.`);
        return reply.redirect(`/dashboard/webhooks?done=endpoint-${action}d#endpoints`, 303);
      },
    );
  }

  app.post<{ Params: { id: string } }>('/webhooks/endpoints/:id/delete', { config: access }, async (request, reply) => {
    if (!(await deleteWebhookEndpoint(services.db, sessionOf(request), request.params.id, services.clock.now()))) {
      throw new AppError('not_found', `No such webhook endpoint: '${request.params.id}'.`);
    }
    return reply.redirect('/dashboard/webhooks?done=endpoint-deleted#endpoints', 303);
  });
}
