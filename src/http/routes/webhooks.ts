import { createdRange, keysetOf, pageFrom, pageParams } from '../../db/pagination.ts';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { parseInput, writtenWholeNumber } from '../../core/validation.ts';
import {
  findEventWithDeliveries,
  listAttempts,
  listEventsWithDeliveries,
  requestRedelivery,
} from '../../db/repositories/webhook-deliveries.ts';
import type { ApiServices } from './services.ts';
import { EVENT_TYPES } from '../../webhooks/event-types.ts';
import { presentAttempt, presentEvent } from '../../webhooks/events.ts';
import {
  DEFAULT_ROTATION_GRACE_MINUTES,
  MAX_ROTATION_GRACE_MINUTES,
  readWebhookSecret,
  rotateWebhookSecret,
} from '../../webhooks/secrets.ts';
import type { ApiOperation } from '../openapi.ts';
import { type AuthContext, requestAuth } from '../plugins/auth.ts';

export const rotateSecretBody = z.strictObject({
  grace_period_minutes: writtenWholeNumber(
    z.number().int().min(0).max(MAX_ROTATION_GRACE_MINUTES),
    'grace_period_minutes must be a whole number of minutes',
  )
    .default(DEFAULT_ROTATION_GRACE_MINUTES)
    .describe(
      'How long the previous secret keeps signing deliveries beside the new one, in minutes (0 to 10080, default 1440 = 24 h). 0 retires it at once.',
    ),
});

export const listEventsQuery = z.strictObject({
  ...pageParams('event', 'evt_…', { default: 10, max: 100 }),
  type: z
    .enum(EVENT_TYPES, { error: `type must be one of ${EVENT_TYPES.join(', ')}` })
    .optional()
    .describe('Only events of this type, e.g. payment.settled.'),
  object_id: z.string().min(1).max(100).optional().describe('Only events about this object, e.g. a payment id.'),
  ...createdRange('event'),
});

const eventIdParams = z.object({ id: z.string().min(1).max(100) });

const webhookSecretView = z.object({
  object: z.literal('webhook_secret'),
  secret: z.string().describe('The current signing secret (whsec_…). Verify deliveries with it.'),
  created: z.string().describe('When the current secret was created (ISO 8601).'),
  previous_secrets: z
    .array(
      z.object({
        created: z.string(),
        expires_at: z.string().describe('Until when it still signs deliveries beside the current one.'),
      }),
    )
    .describe('Rotated-out secrets still inside their grace period. Their values are not shown again.'),
});

const deliveryFields = {
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int().describe('Attempts made so far.'),
  next_attempt_at: z.string().nullable().describe('When the next attempt is due, while pending.'),
  last_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  failed_at: z.string().nullable(),
};

const deliveryView = z
  .object(deliveryFields)
  .nullable()
  .describe('Delivery state to webhook_url; null when the event has no webhook_url.');

const eventView = z.object({
  id: z.string().describe('Event id; the webhook-id header and the body id carry the same value.'),
  object: z.literal('event'),
  type: z.string().describe(`What happened: ${EVENT_TYPES.join(', ')}.`),
  created: z.string().describe('When the event happened (ISO 8601).'),
  livemode: z.boolean(),
  data: z.unknown().describe('The event data, exactly as delivered.'),
  object_id: z.string().nullable().describe('The object the event is about.'),
  webhook_url: z.string().nullable().describe("The object's own webhook URL (a payment's); null: none."),
  delivery: deliveryView,
  endpoint_deliveries: z
    .array(
      z.object({
        endpoint_id: z.string().describe('The account webhook endpoint (we_…) it goes to.'),
        ...deliveryFields,
      }),
    )
    .describe('Delivery state to each account webhook endpoint subscribed to the type when the event was written.'),
});

const attemptView = z.object({
  id: z.string(),
  object: z.literal('webhook_attempt'),
  event_id: z.string(),
  attempt: z.number().int().describe('1 for the first attempt, then 2, 3, …'),
  trigger: z.enum(['automatic', 'redelivery']),
  endpoint_id: z
    .string()
    .nullable()
    .describe("The account webhook endpoint it went to; null: the event's webhook_url."),
  url: z.string(),
  status: z
    .enum(['succeeded', 'failed', 'in_progress', 'interrupted'])
    .describe('interrupted: the worker stopped mid-attempt; the event is sent again.'),
  created: z.string().describe('When the attempt started.'),
  finished_at: z.string().nullable().describe('When the attempt ended, or null while it runs.'),
  finished: z.string().nullable().describe('Deprecated: finished_at. Removed in the next release.'),
  response_status: z.number().int().nullable().describe("The receiver's HTTP status, if it answered."),
  latency_ms: z.number().int().nullable().describe('From the start of the attempt to the response headers.'),
  response_excerpt: z.string().nullable().describe('At most the first 1 KB of the response body.'),
  error: z
    .object({ code: z.string(), message: z.string().nullable() })
    .nullable()
    .describe('Why it failed: timeout, network, redirect, http_status, refused_target, dns_failed, …'),
});

export const webhookOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/webhook_secret',
    operationId: 'get_webhook_secret',
    summary: 'Read the webhook signing secret',
    description:
      "The current whsec_ secret of the calling key's mode (each mode has its own; it signs that mode's events only).",
    tag: 'webhooks',
    scope: 'webhooks',
    response: webhookSecretView,
  },
  {
    method: 'POST',
    path: '/v1/webhook_secret/rotate',
    operationId: 'rotate_webhook_secret',
    summary: 'Rotate the webhook signing secret',
    description:
      'Makes a new current secret. During the grace period every delivery is signed with both secrets, so the receiver can switch at any time.',
    tag: 'webhooks',
    scope: 'webhooks',
    body: rotateSecretBody,
    response: webhookSecretView,
  },
  {
    method: 'GET',
    path: '/v1/events',
    operationId: 'list_events',
    summary: 'List events',
    description: 'Events of the calling key’s account and mode, newest first, with their delivery state.',
    tag: 'events',
    scope: 'webhooks',
    query: listEventsQuery,
    response: z.object({ object: z.literal('list'), data: z.array(eventView), has_more: z.boolean() }),
  },
  {
    method: 'GET',
    path: '/v1/events/:id',
    operationId: 'get_event',
    summary: 'Read an event',
    tag: 'events',
    scope: 'webhooks',
    response: eventView,
  },
  {
    method: 'GET',
    path: '/v1/events/:id/deliveries',
    operationId: 'list_event_deliveries',
    summary: "List an event's delivery attempts",
    description: 'Every attempt in the order made: status, HTTP status, latency and a response excerpt.',
    tag: 'events',
    scope: 'webhooks',
    response: z.object({ object: z.literal('list'), data: z.array(attemptView), has_more: z.boolean() }),
  },
  {
    method: 'POST',
    path: '/v1/events/:id/redeliver',
    operationId: 'redeliver_event',
    summary: 'Send an event again',
    description:
      'Queues the event for a new round of attempts now to each of its targets (with the same id, so receivers still dedupe), whether it was delivered or failed. An attempt already in flight is left to finish; a disabled or deleted endpoint gets nothing.',
    tag: 'events',
    scope: 'webhooks',
    response: eventView,
  },
];

async function ownedEvent(services: Pick<ApiServices, 'db'>, auth: AuthContext, raw: unknown) {
  const { id } = parseInput(eventIdParams, raw);
  const found = await findEventWithDeliveries(services.db, auth, id);
  if (!found) throw new AppError('not_found', `No such event: '${id}'.`, { param: 'id' });
  return found;
}

export function webhookRoutes(services: Pick<ApiServices, 'db' | 'secretBox' | 'clock'>): FastifyPluginAsync {
  const auth = { auth: { scope: 'webhooks' as const } };
  return async (app) => {
    app.get('/v1/webhook_secret', { config: auth }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      return readWebhookSecret(services.db, services.secretBox, { accountId, livemode }, services.clock.now());
    });

    app.post('/v1/webhook_secret/rotate', { config: auth }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      const body = parseInput(rotateSecretBody, request.body);
      return services.db.transaction().execute((trx) =>
        rotateWebhookSecret(trx, services.secretBox, {
          accountId,
          livemode,
          now: services.clock.now(),
          gracePeriodMinutes: body.grace_period_minutes,
        }),
      );
    });

    app.get('/v1/events', { config: auth }, async (request) => {
      const caller = requestAuth(request);
      const query = parseInput(listEventsQuery, request.query);
      const keyset = await keysetOf(
        query,
        'event',
        async (id) => (await findEventWithDeliveries(services.db, caller, id))?.event,
      );
      const rows = await listEventsWithDeliveries(services.db, {
        accountId: caller.accountId,
        livemode: caller.livemode,
        type: query.type,
        objectId: query.object_id,
        createdGte: query.created_gte,
        createdLte: query.created_lte,
        keyset,
        limit: query.limit + 1,
      });
      const page = pageFrom(rows, query.limit, keyset);
      return {
        object: 'list',
        data: page.data.map((row) => presentEvent(row.event, row.deliveries)),
        has_more: page.has_more,
      };
    });

    app.get('/v1/events/:id', { config: auth }, async (request) => {
      const found = await ownedEvent(services, requestAuth(request), request.params);
      return presentEvent(found.event, found.deliveries);
    });

    app.get('/v1/events/:id/deliveries', { config: auth }, async (request) => {
      const found = await ownedEvent(services, requestAuth(request), request.params);
      const attempts = await listAttempts(services.db, found.event.id);
      const now = services.clock.now();
      return {
        object: 'list',
        data: attempts.map((attempt) => presentAttempt(attempt, found.deliveries, now)),
        has_more: false,
      };
    });

    app.post('/v1/events/:id/redeliver', { config: auth }, async (request) => {
      const found = await ownedEvent(services, requestAuth(request), request.params);
      if (found.deliveries.length === 0) {
        throw new AppError(
          'invalid_request',
          `Event '${found.event.id}' has no webhook_url and no webhook endpoint received it: it was recorded only, so there is nowhere to deliver it.`,
          { param: 'id' },
        );
      }
      const deliveries = await requestRedelivery(services.db, found.event.id, services.clock.now());
      return presentEvent(found.event, deliveries);
    });
  };
}
