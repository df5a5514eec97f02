import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import type { AnyTool } from '../../core/tool.ts';
import { approveConfirmation, rejectConfirmation } from '../../policy/approvals.ts';
import { confirmationOutput, presentConfirmation } from '../../policy/confirmations.ts';
import type { Runtime } from '../../runtime.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

export const confirmationOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/confirmations/:id',
    operationId: 'get_confirmation',
    summary: 'Get a held action',
    tag: 'confirmations',
    scope: 'payments:read',
    response: confirmationOutput,
  },
  {
    method: 'POST',
    path: '/v1/confirmations/:id/approve',
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
  },
  {
    method: 'POST',
    path: '/v1/confirmations/:id/reject',
    operationId: 'reject_confirmation',
    summary: 'Reject a held action',
    description: "Needs the 'approvals' scope and a key other than the one that asked. Nothing moves.",
    tag: 'confirmations',
    scope: 'approvals',
    response: confirmationOutput,
  },
];

export function confirmationRoutes(runtime: Runtime, tools: readonly AnyTool[]): FastifyPluginAsync {
  const view = async (accountId: string, livemode: boolean, id: string) => {
    const row = await runtime.db
      .selectFrom('confirmations')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .where('livemode', '=', livemode)
      .executeTakeFirst();
    if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
    return presentConfirmation(runtime.config, row, runtime.clock.now());
  };
  return async (app) => {
    app.get<{ Params: { id: string } }>(
      '/v1/confirmations/:id',
      { config: { auth: { scope: 'payments:read' } } },
      async (request) => {
        const auth = requestAuth(request);
        return view(auth.accountId, auth.livemode, request.params.id);
      },
    );

    app.post<{ Params: { id: string } }>(
      '/v1/confirmations/:id/approve',
      { config: { auth: { scope: 'approvals' } } },
      async (request) => {
        const auth = requestAuth(request);
        const result = await approveConfirmation(runtime, tools, auth, request.params.id);
        if (result.kind !== 'executed') throw new AppError('conflict', 'The approved action did not execute.');
        return { confirmation: await view(auth.accountId, auth.livemode, request.params.id), result: result.output };
      },
    );

    app.post<{ Params: { id: string } }>(
      '/v1/confirmations/:id/reject',
      { config: { auth: { scope: 'approvals' } } },
      async (request) => {
        const auth = requestAuth(request);
        await rejectConfirmation(runtime, auth, request.params.id);
        return view(auth.accountId, auth.livemode, request.params.id);
      },
    );
  };
}
