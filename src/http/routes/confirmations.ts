import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import type { AnyTool } from '../../core/tool.ts';
import { approveConfirmation, rejectConfirmation } from '../../pipeline/approvals.ts';
import { confirmationOutput, presentConfirmation } from '../../policy/confirmations.ts';
import type { ToolEnvironment } from '../../core/tool.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';
import { findConfirmation } from '../../db/repositories/confirmations.ts';

/**
 * Deciding a held action. Reading one is the get_confirmation tool (GET
 * /v1/confirmations/:confirmation_id), so the API and assistants read it the same way.
 */
export const confirmationOperations: ApiOperation[] = [
  {
    method: 'POST',
    path: '/v1/confirmations/:confirmation_id/approve',
    operationId: 'approve_confirmation',
    summary: 'Approve a held action',
    description:
      "Needs the 'approvals' scope and a key other than the one that asked. Runs the held input through the pipeline once (policy re-checked, except the confirmation it satisfies).",
    tag: 'confirmations',
    scope: 'approvals',
    response: z.object({
      confirmation: confirmationOutput,
      result: z.unknown().describe('The output of the executed tool.'),
    }),
    // Not pending any more (409); the held money call runs now, re-judged by the policy and paid
    // from the balance as it is now.
    errors: ['conflict', 'policy_denied', 'insufficient_funds'],
  },
  {
    method: 'POST',
    path: '/v1/confirmations/:confirmation_id/reject',
    operationId: 'reject_confirmation',
    summary: 'Reject a held action',
    description: "Needs the 'approvals' scope and a key other than the one that asked. Nothing moves.",
    tag: 'confirmations',
    scope: 'approvals',
    response: confirmationOutput,
    errors: ['conflict'],
  },
];

export function confirmationRoutes(env: ToolEnvironment, tools: readonly AnyTool[]): FastifyPluginAsync {
  const view = async (accountId: string, livemode: boolean, id: string) => {
    const row = await findConfirmation(env.db, { accountId, livemode }, id);
    if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
    return presentConfirmation(env.config, row, env.clock.now());
  };
  return async (app) => {
    app.post<{ Params: { confirmation_id: string } }>(
      '/v1/confirmations/:confirmation_id/approve',
      { config: { auth: { scope: 'approvals' } } },
      async (request) => {
        const auth = requestAuth(request);
        const result = await approveConfirmation(env, tools, auth, request.params.confirmation_id);
        if (result.kind !== 'executed') throw new AppError('conflict', 'The approved action did not execute.');
        return {
          confirmation: await view(auth.accountId, auth.livemode, request.params.confirmation_id),
          result: result.output,
        };
      },
    );

    app.post<{ Params: { confirmation_id: string } }>(
      '/v1/confirmations/:confirmation_id/reject',
      { config: { auth: { scope: 'approvals' } } },
      async (request) => {
        const auth = requestAuth(request);
        await rejectConfirmation(env, auth, request.params.confirmation_id);
        return view(auth.accountId, auth.livemode, request.params.confirmation_id);
      },
    );
  };
}
