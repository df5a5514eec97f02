import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { parseInput } from '../../core/validation.ts';
import { keysetOf, pageFrom, pageParams } from '../../db/pagination.ts';
import {
  deleteWebhookEndpoint,
  findWebhookEndpoint,
  listWebhookEndpoints,
  updateWebhookEndpoint,
} from '../../db/repositories/webhook-endpoints.ts';
import type { ApiServices } from './services.ts';
import {
  assertEndpointUrl,
  createWebhookEndpoint,
  endpointDescriptionSchema,
  enabledEventsSchema,
  endpointUrlSchema,
  normaliseEnabledEvents,
  presentWebhookEndpoint,
} from '../../webhooks/endpoints.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

export const createEndpointBody = z.strictObject({
  url: endpointUrlSchema,
  enabled_events: enabledEventsSchema,
  description: endpointDescriptionSchema.optional(),
  disabled: z.boolean().default(false).describe('Create it disabled: it receives nothing until enabled.'),
});

export const updateEndpointBody = z.strictObject({
  url: endpointUrlSchema.optional(),
  enabled_events: enabledEventsSchema.optional(),
  description: endpointDescriptionSchema.nullable().optional().describe('Your note on it; null clears it.'),
  disabled: z
    .boolean()
    .optional()
    .describe('true disables it: deliveries not yet made to it are dropped, and new events skip it.'),
});

export const listEndpointsQuery = z.strictObject({
  ...pageParams('webhook endpoint', 'we_…', { default: 10, max: 100 }),
});

const endpointIdParams = z.object({ id: z.string().min(1).max(100) });

const endpointFields = {
  id: z.string().describe('Endpoint id (we_…).'),
  object: z.literal('webhook_endpoint'),
  url: z.string(),
  enabled_events: z.array(z.string()).describe('The event types it receives; ["*"]: every type.'),
  description: z.string().nullable(),
  status: z.enum(['enabled', 'disabled']),
  livemode: z.boolean().describe('The mode whose events it receives: that of the key that created it.'),
  created: z.string(),
  updated_at: z.string().describe('When it was last changed.'),
};

const endpointView = z.object(endpointFields).describe('An account webhook endpoint. Its secret is never shown again.');

const createdEndpointView = z
  .object({
    ...endpointFields,
    secret: z
      .string()
      .describe('Its signing secret (whsec_…), shown this once: verify its deliveries with it (Standard Webhooks).'),
  })
  .describe('The new endpoint, with its signing secret.');

// The list comes first: the OpenAPI component WebhookEndpoint is named after the first schema that
// claims it, and that must be the view without the secret.
export const webhookEndpointOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/webhook_endpoints',
    operationId: 'list_webhook_endpoints',
    summary: 'List webhook endpoints',
    description: "The endpoints of the calling key's account and mode, newest first.",
    tag: 'webhooks',
    scope: 'webhooks',
    query: listEndpointsQuery,
    response: z.object({ object: z.literal('list'), data: z.array(endpointView), has_more: z.boolean() }),
  },
  {
    method: 'GET',
    path: '/v1/webhook_endpoints/:id',
    operationId: 'get_webhook_endpoint',
    summary: 'Read a webhook endpoint',
    tag: 'webhooks',
    scope: 'webhooks',
    response: endpointView,
  },
  {
    method: 'POST',
    path: '/v1/webhook_endpoints',
    operationId: 'create_webhook_endpoint',
    summary: 'Create a webhook endpoint',
    description:
      "A URL that receives the account's events of the chosen types (in the calling key's mode), signed with its own secret, which this answer shows once.",
    tag: 'webhooks',
    scope: 'webhooks',
    body: createEndpointBody,
    response: createdEndpointView,
  },
  {
    method: 'POST',
    path: '/v1/webhook_endpoints/:id',
    operationId: 'update_webhook_endpoint',
    summary: 'Update a webhook endpoint',
    description:
      'Changes the fields sent. A new url also applies to retries still due; disabling drops deliveries not yet made.',
    tag: 'webhooks',
    scope: 'webhooks',
    body: updateEndpointBody,
    response: endpointView,
  },
  {
    method: 'DELETE',
    path: '/v1/webhook_endpoints/:id',
    operationId: 'delete_webhook_endpoint',
    summary: 'Delete a webhook endpoint',
    description: 'It receives nothing more; deliveries not yet made to it are dropped.',
    tag: 'webhooks',
    scope: 'webhooks',
    response: z.object({ id: z.string(), object: z.literal('webhook_endpoint'), deleted: z.literal(true) }),
  },
];

export function webhookEndpointRoutes(
  services: Pick<ApiServices, 'config' | 'db' | 'secretBox' | 'clock'>,
): FastifyPluginAsync {
  const auth = { auth: { scope: 'webhooks' as const } };
  const urlOptions = { allowPrivate: services.config.webhookAllowPrivate };
  const noSuchEndpoint = (id: string): AppError =>
    new AppError('not_found', `No such webhook endpoint: '${id}'.`, { param: 'id' });

  return async (app) => {
    app.post('/v1/webhook_endpoints', { config: auth }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      const body = parseInput(createEndpointBody, request.body);
      await assertEndpointUrl(body.url, urlOptions);
      return services.db.transaction().execute((trx) =>
        createWebhookEndpoint(trx, services.secretBox, {
          accountId,
          livemode,
          url: body.url,
          enabledEvents: body.enabled_events,
          description: body.description ?? null,
          disabled: body.disabled,
          now: services.clock.now(),
        }),
      );
    });

    app.get('/v1/webhook_endpoints', { config: auth }, async (request) => {
      const scope = requestAuth(request);
      const query = parseInput(listEndpointsQuery, request.query);
      const keyset = await keysetOf(query, 'webhook endpoint', (id) => findWebhookEndpoint(services.db, scope, id));
      const rows = await listWebhookEndpoints(services.db, scope, { keyset, limit: query.limit + 1 });
      const page = pageFrom(rows, query.limit, keyset);
      return { object: 'list', data: page.data.map(presentWebhookEndpoint), has_more: page.has_more };
    });

    app.get('/v1/webhook_endpoints/:id', { config: auth }, async (request) => {
      const { id } = parseInput(endpointIdParams, request.params);
      const row = await findWebhookEndpoint(services.db, requestAuth(request), id);
      if (!row) throw noSuchEndpoint(id);
      return presentWebhookEndpoint(row);
    });

    app.post('/v1/webhook_endpoints/:id', { config: auth }, async (request) => {
      const { id } = parseInput(endpointIdParams, request.params);
      const body = parseInput(updateEndpointBody, request.body);
      if (body.url !== undefined) await assertEndpointUrl(body.url, urlOptions);
      const row = await updateWebhookEndpoint(
        services.db,
        requestAuth(request),
        id,
        {
          url: body.url,
          enabledEvents: body.enabled_events && normaliseEnabledEvents(body.enabled_events),
          description: body.description,
          disabled: body.disabled,
        },
        services.clock.now(),
      );
      if (!row) throw noSuchEndpoint(id);
      return presentWebhookEndpoint(row);
    });

    app.delete('/v1/webhook_endpoints/:id', { config: auth }, async (request) => {
      const { id } = parseInput(endpointIdParams, request.params);
      if (!(await deleteWebhookEndpoint(services.db, requestAuth(request), id, services.clock.now()))) {
        throw noSuchEndpoint(id);
      }
      return { id, object: 'webhook_endpoint', deleted: true };
    });
  };
}
