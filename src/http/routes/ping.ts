import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

export const pingOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/ping',
    operationId: 'ping',
    summary: 'Check an API key',
    description: 'Confirms a key works and tells which account it belongs to and whether it is live.',
    tag: 'ping',
    scope: 'any',
    response: z.object({
      ok: z.literal(true).describe('Always true on success.'),
      account: z.string().describe('Id of the account the key is scoped to.'),
      live: z.boolean().describe('Whether the key is a live key.'),
    }),
  },
];

export function pingRoutes(): FastifyPluginAsync {
  return async (app) => {
    /**
     * The seed's key check: which account a key belongs to and whether it is live. A handler that
     * sends, not an async one: the answer is known at once, and a promise on the busiest route is
     * a measurable share of its CPU (bench/http.ts `ping`).
     */
    app.get('/v1/ping', { config: { auth: {} } }, (request, reply) => {
      const auth = requestAuth(request);
      reply.send({ ok: true, account: auth.accountId, live: auth.livemode });
    });
  };
}
