import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { parseInput, writtenWholeNumber } from '../core/validation.ts';
import { pageParams } from '../db/pagination.ts';
import { API_KEY_SCOPES } from '../domain/api-key-secret.ts';
import {
  apiKeyOutput,
  assertCanGrant,
  issueApiKey,
  pageAccountApiKeys,
  revokeAccountApiKey,
  rotateAccountApiKey,
} from './api-keys.ts';
import type { ApiServices } from '../http/routes/services.ts';
import type { ApiOperation } from '../http/openapi.ts';
import { requestAuth } from '../http/plugins/auth.ts';

export const createKeyBody = z.strictObject({
  live: z
    .boolean()
    .optional()
    .describe('Create a live key (true) or a test key (false). Defaults to the mode of the calling key.'),
  scopes: z
    .array(z.enum(API_KEY_SCOPES))
    .min(1)
    .optional()
    .describe("Scopes of the new key; at most those of the calling key. Defaults to the calling key's scopes."),
  name: z.string().min(1).max(100).optional().describe('A label to recognise the key by.'),
  assistant: z
    .boolean()
    .optional()
    .describe(
      "Issue the key to an AI assistant: every call made with it, over REST, MCP or the agent, is judged by the policy's mcp limits as well as its own channel's. Defaults to the calling key's; an assistant's key can only create assistant keys.",
    ),
});

export const rotateKeyBody = z.strictObject({
  expires_in_minutes: writtenWholeNumber(
    z.number().int().min(0).max(10_080),
    'expires_in_minutes must be a whole number of minutes',
  )
    .default(60)
    .describe('How long the old key keeps working, in minutes (0 to 10080, default 60).'),
});

// 100 by default: an account has few keys, and clients written before keys were paged got them all.
const listKeysQuery = z.strictObject(pageParams('API key', 'key_…', { default: 100, max: 100 }));

const keyIdParams = z.object({ id: z.string().min(1).max(100) });

const issuedKey = apiKeyOutput.extend({ secret: z.string().describe('The secret key, shown this once.') });

export const keyOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/keys',
    operationId: 'list_api_keys',
    summary: 'List API keys',
    description: "The account's keys, newest first; never a secret or a hash.",
    tag: 'keys',
    scope: 'keys',
    query: listKeysQuery,
    response: z.object({ object: z.literal('list'), data: z.array(apiKeyOutput), has_more: z.boolean() }),
  },
  {
    method: 'POST',
    path: '/keys',
    operationId: 'create_api_key',
    summary: 'Create an API key',
    description:
      'Returns the secret once. A key can grant only scopes it holds, and a test key cannot create a live key.',
    tag: 'keys',
    scope: 'keys',
    body: createKeyBody,
    response: issuedKey,
  },
  {
    method: 'POST',
    path: '/keys/:id/revoke',
    operationId: 'revoke_api_key',
    summary: 'Revoke an API key',
    tag: 'keys',
    scope: 'keys',
    response: apiKeyOutput,
  },
  {
    method: 'POST',
    path: '/keys/:id/rotate',
    operationId: 'rotate_api_key',
    summary: 'Rotate an API key',
    description:
      'Issues a replacement with the same mode, scopes and name; the old key works until expires_in_minutes.',
    tag: 'keys',
    scope: 'keys',
    body: rotateKeyBody,
    response: z.object({ new_key: issuedKey, old_key: apiKeyOutput }),
    // A revoked or expired key cannot be rotated.
    errors: ['conflict'],
  },
];

export function keyRoutes(services: Pick<ApiServices, 'db' | 'clock'>): FastifyPluginAsync {
  const auth = { auth: { scope: 'keys' as const } };
  return async (app) => {
    app.get('/keys', { config: auth }, async (request) => {
      const caller = requestAuth(request);
      const page = parseInput(listKeysQuery, request.query);
      return { object: 'list', ...(await pageAccountApiKeys(services.db, caller.accountId, caller, page)) };
    });

    app.post('/keys', { config: auth }, async (request) => {
      const caller = requestAuth(request);
      const body = parseInput(createKeyBody, request.body);
      const livemode = body.live ?? caller.livemode;
      const scopes =
        body.scopes ??
        [...caller.scopes].filter((s): s is (typeof API_KEY_SCOPES)[number] =>
          (API_KEY_SCOPES as readonly string[]).includes(s),
        );
      const assistant = body.assistant ?? caller.assistant;
      assertCanGrant(caller, livemode, scopes, assistant);
      return issueApiKey(services.db, {
        accountId: caller.accountId,
        livemode,
        scopes,
        name: body.name ?? null,
        createdByKey: caller.keyId,
        assistant,
      });
    });

    app.post('/keys/:id/revoke', { config: auth }, async (request) => {
      const caller = requestAuth(request);
      const { id } = parseInput(keyIdParams, request.params);
      return revokeAccountApiKey(services.db, caller.accountId, id, services.clock.now(), caller);
    });

    app.post('/keys/:id/rotate', { config: auth }, async (request) => {
      const caller = requestAuth(request);
      const { id } = parseInput(keyIdParams, request.params);
      const body = parseInput(rotateKeyBody, request.body);
      return services.db.transaction().execute((trx) =>
        rotateAccountApiKey(trx, {
          keyId: id,
          oldKeyExpiresInMinutes: body.expires_in_minutes,
          now: services.clock.now(),
          manager: caller,
        }),
      );
    });
  };
}
