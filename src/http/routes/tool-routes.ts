import { IDEMPOTENCY_KEY_PATTERN } from '../../core/validation.ts';
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { executeTool } from '../../core/pipeline.ts';
import type { AnyTool } from '../../core/tool.ts';
import type { Runtime } from '../../runtime.ts';
import { requestAuth } from '../plugins/auth.ts';

/**
 * Each tool with an http binding becomes one route; the route only gathers the input (path
 * params + query for reads, + JSON body for writes) and runs the tool through the pipeline.
 */
export function toolRoutes(runtime: Runtime, tools: readonly AnyTool[]): FastifyPluginAsync {
  return async (app) => {
    for (const tool of tools) {
      if (!tool.http) continue;
      app.route({
        method: tool.http.method,
        url: tool.http.path,
        config: { auth: { scope: tool.scope } },
        handler: async (request, reply) => {
          const auth = requestAuth(request);
          const body = request.body;
          if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
            throw new AppError('invalid_request', 'The request body must be a JSON object.');
          }
          const input = {
            ...(request.query as Record<string, unknown>),
            ...(body as Record<string, unknown> | undefined),
            ...(request.params as Record<string, unknown>),
          };
          const result = await executeTool(tool, input, {
            runtime,
            actor: {
              accountId: auth.accountId,
              livemode: auth.livemode,
              keyId: auth.keyId,
              scopes: auth.scopes,
              channel: 'api',
            },
            idempotencyKey:
              request.method === 'POST' ? idempotencyKeyOf(request.headers['idempotency-key']) : undefined,
          });
          if (result.kind === 'planned') throw new AppError('internal', 'A REST call was planned instead of executed.');
          if (result.replayed) reply.header('Idempotent-Replayed', 'true');
          if (result.kind === 'confirmation_required') {
            // Accepted, not done: a human must approve it (POST /v1/confirmations/:id/approve).
            return reply.code(202).send({ object: 'confirmation_required', tool: tool.name, ...result.confirmation });
          }
          return result.output;
        },
      });
    }
  };
}

function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw new AppError('invalid_request', 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.', {
      param: 'Idempotency-Key',
    });
  }
  return header;
}
