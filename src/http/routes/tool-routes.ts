import { IDEMPOTENCY_KEY_PATTERN } from '../../core/validation.ts';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { executeTool } from '../../pipeline/execute-tool.ts';
import type { AnyTool } from '../../core/tool.ts';
import type { ToolEnvironment } from '../../core/tool.ts';
import { type ApiOperation, pathParamsOf } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

/**
 * The 202 body of a tool call the policy held. The route sends what this schema parses and the
 * OpenAPI document describes this schema (as ConfirmationRequired), so the two cannot drift: a
 * field the pipeline adds is not sent until it is declared here, and so documented.
 */
export const heldToolCall = z
  .object({
    object: z.literal('confirmation_required'),
    tool: z.string().describe('The held tool, e.g. create_payout.'),
    status: z.literal('confirmation_required'),
    confirmation_id: z
      .string()
      .describe('The held action (conf_…): POST /v1/confirmations/{id}/approve with another key runs it.'),
    summary: z.string().describe('What would happen, in one line.'),
    approve_url: z.string().describe('Where a human with an approvals key approves it.'),
    expires_at: z.string().describe('When the hold lapses unless approved (ISO 8601).'),
    reasons: z
      .array(z.object({ rule: z.string(), outcome: z.string(), reason: z.string() }))
      .describe('Why the policy held it.'),
  })
  .describe('A money call the account policy held for a human to approve. Nothing has moved.');

/**
 * The operations of the tool routes below, from the tools themselves. Only money tools are judged
 * by the policy on the api channel (src/pipeline/execute-tool.ts), so only they can be held (202) or denied by it
 * (403 policy_denied); and each money tool takes its amount from the custodial balance, which the
 * ledger never lets go negative (402 insufficient_funds).
 */
export function toolOperations(tools: readonly AnyTool[]): ApiOperation[] {
  return tools.flatMap((tool): ApiOperation[] => {
    if (!tool.http) return [];
    const withoutPath = omitKeys(tool.input, pathParamsOf(tool.http.path));
    const money = tool.effect === 'money';
    return [
      {
        method: tool.http.method,
        path: tool.http.path,
        operationId: tool.name,
        summary: tool.title,
        description: tool.description,
        tag: tagOf(tool.http.path),
        scope: tool.scope,
        ...(tool.http.method === 'GET' ? { query: withoutPath } : { body: withoutPath }),
        response: tool.output,
        ...(money
          ? {
              accepted: {
                description:
                  'Held: the account policy requires a human to approve this call (POST /v1/confirmations/{id}/approve). Nothing has moved.',
                schema: heldToolCall,
              },
            }
          : {}),
        errors: [...(money ? (['policy_denied', 'insufficient_funds'] as const) : []), ...(tool.errors ?? [])],
        idempotent: tool.http.method === 'POST',
      },
    ];
  });
}

/**
 * Each tool with an http binding becomes one route; the route only gathers the input (path
 * params + query for reads, + JSON body for writes) and runs the tool through the pipeline.
 */
export function toolRoutes(env: ToolEnvironment, tools: readonly AnyTool[]): FastifyPluginAsync {
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
            runtime: env,
            actor: {
              accountId: auth.accountId,
              livemode: auth.livemode,
              keyId: auth.keyId,
              scopes: auth.scopes,
              channel: 'api',
              assistant: auth.assistant,
            },
            idempotencyKey:
              request.method === 'POST' ? idempotencyKeyOf(request.headers['idempotency-key']) : undefined,
          });
          if (result.kind === 'planned') throw new AppError('internal', 'A REST call was planned instead of executed.');
          if (result.replayed) reply.header('Idempotent-Replayed', 'true');
          if (result.kind === 'confirmation_required') {
            // Accepted, not done: a human must approve it (POST /v1/confirmations/:id/approve).
            const held: z.input<typeof heldToolCall> = {
              object: 'confirmation_required',
              tool: tool.name,
              ...result.confirmation,
            };
            // The hold is committed: a schema that drifted must not turn it into a 500 (and every
            // replay with it). openapi.test.ts keeps the two in step; here it is only logged.
            const parsed = heldToolCall.safeParse(held);
            if (!parsed.success)
              request.log.error({ issues: parsed.error.issues }, 'held answer does not match its schema');
            return reply.code(202).send(parsed.success ? parsed.data : held);
          }
          if (result.outputJson !== undefined) {
            return reply.type('application/json; charset=utf-8').send(result.outputJson);
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

function omitKeys(schema: z.ZodType, keys: string[]): z.ZodType {
  if (keys.length === 0) return schema;
  const object = schema as unknown as z.ZodObject;
  return object.omit(Object.fromEntries(keys.map((k) => [k, true])) as never);
}

function tagOf(path: string): string {
  const segment =
    path
      .split('/')
      .filter(Boolean)
      .find((s) => s !== 'v1' && !s.startsWith(':')) ?? 'misc';
  return segment.replace(/_/g, ' ');
}
