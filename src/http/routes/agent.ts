import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { actionsCsv, actionsQuery, listActions } from '../../agent/actions-query.ts';
import {
  actionHistoryOutput,
  agentActionOutput,
  loadActionHistory,
  loadActionRows,
  presentAgentAction,
} from '../../audit/action-rows.ts';
import type { AgentModel } from '../../agent/model.ts';
import { expireUnansweredRuns, loadRunView, presentRun, replyToRun, runAgent } from '../../agent/runtime.ts';
import type { AnyTool } from '../../core/tool.ts';
import { parseInput } from '../../core/validation.ts';
import type { ToolEnvironment } from '../../core/tool.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';
import { pageParams } from '../../db/pagination.ts';
import { agentRunView } from '../../agent/run-view.ts';
import { listRunsPage } from '../../db/repositories/agent-runs.ts';

export const settleBody = z.strictObject({
  instruction: z
    .string({ error: 'instruction must be a string' })
    .trim()
    .min(1, 'instruction must not be empty')
    .max(4000, 'instruction must be at most 4000 characters')
    .describe('What to do, in plain words, e.g. "pay out 250 USDC to 0x… for invoice 42".'),
  dry_run: z
    .boolean({ error: 'dry_run must be true or false' })
    .default(false)
    .describe('Plan and check the policy, but move nothing.'),
  idempotency_key: z
    .string({ error: 'idempotency_key must be a string' })
    .min(1)
    .max(255, 'idempotency_key must be at most 255 characters')
    .optional()
    .describe('The same key with the same instruction runs once and returns the first run.'),
});

export const replyBody = z.strictObject({
  message: z
    .string({ error: 'message must be a string' })
    .trim()
    .min(1, 'message must not be empty')
    .max(4000, 'message must be at most 4000 characters')
    .describe(
      'The answer to the run\'s question: "yes" (or another word of the documented list) runs the proposed actions as shown, a new amount ("make it 2000") runs them with it, "no"/"cancel" cancels the run, anything else continues the conversation.',
    ),
  idempotency_key: z
    .string({ error: 'idempotency_key must be a string' })
    .min(1)
    .max(255, 'idempotency_key must be at most 255 characters')
    .optional()
    .describe(
      'The same key with the same message is the same answer: a replay returns the run and runs nothing again.',
    ),
});

/** The statuses a run shows (a run still `running` shows as failed: see presentRun). */
const RUN_STATUSES = agentRunView.shape.status.options;

const runsQuery = z.strictObject({
  status: z
    .enum(RUN_STATUSES, { error: `status must be one of ${RUN_STATUSES.join(', ')}` })
    .optional()
    .describe('Only runs in this status.'),
  ...pageParams('run', 'run_…'),
});

export const agentOperations: ApiOperation[] = [
  {
    method: 'POST',
    path: '/agent/settle',
    operationId: 'agent_settle',
    summary: 'Instruct the agent in plain language',
    description:
      'Runs the agent on one instruction. Every tool call goes through the same pipeline as the API, on the agent channel of the policy. See docs/agent.md.',
    tag: 'agent',
    scope: 'agent',
    body: settleBody,
    response: agentRunView,
    // idempotency_key (or the Idempotency-Key header) first used with another instruction, or its
    // run still running.
    errors: ['idempotency_conflict', 'conflict'],
  },
  {
    method: 'GET',
    path: '/agent/runs',
    operationId: 'list_agent_runs',
    summary: 'List agent runs',
    tag: 'agent',
    scope: 'agent',
    query: runsQuery,
    response: z.object({
      object: z.literal('list'),
      data: z.array(agentRunView.omit({ actions: true, confirmations: true, conversation: true, question: true })),
      has_more: z.boolean(),
    }),
  },
  {
    method: 'GET',
    path: '/agent/runs/:id',
    operationId: 'get_agent_run',
    summary: 'Get an agent run with its actions',
    tag: 'agent',
    scope: 'agent',
    response: agentRunView,
  },
  {
    method: 'POST',
    path: '/agent/runs/:id/reply',
    operationId: 'reply_to_agent_run',
    summary: "Answer an agent run's question",
    description:
      'Continues a run that asked back (status needs_input) with the merchant\'s answer, in the same run: "yes" runs the proposed actions as shown, a new amount runs them with that amount, "no" cancels, anything else continues the conversation. Policy and grounding judge what runs as they judge a first instruction. 409 when the run is not waiting for an answer. See docs/agent.md.',
    tag: 'agent',
    scope: 'agent',
    body: replyBody,
    response: agentRunView,
    idempotent: true,
  },
  {
    method: 'GET',
    path: '/agent/actions',
    operationId: 'list_agent_actions',
    summary: 'List recorded actions (all channels)',
    description:
      'Every money tool call from any channel, and every agent and MCP tool call, newest first: one row per action in its final state, with what moved, who asked and who decided, the object it created and its settlement transaction.',
    tag: 'agent',
    scope: 'agent',
    query: actionsQuery,
    response: z.object({
      object: z.literal('list'),
      data: z.array(agentActionOutput),
      has_more: z.boolean(),
    }),
  },
  {
    method: 'GET',
    path: '/agent/actions/:id',
    operationId: 'get_agent_action',
    summary: 'Get a recorded action with its steps',
    description:
      'The action as GET /agent/actions lists it, with `history`: its steps as the action log records them, failed approval attempts included.',
    tag: 'agent',
    scope: 'agent',
    response: agentActionOutput.extend({ history: actionHistoryOutput }),
  },
  {
    method: 'GET',
    path: '/agent/actions.csv',
    operationId: 'export_agent_actions_csv',
    summary: 'Export recorded actions as CSV',
    description:
      'The same filters and page as GET /agent/actions, as a CSV attachment (agent-actions.csv): plain columns, amounts as decimal strings, UTF-8 with a byte order mark.',
    tag: 'agent',
    scope: 'agent',
    query: actionsQuery,
    response: z
      .string()
      .describe(
        'RFC 4180 CSV with a header row: id, created, channel, key_id, requested_by, run_id, instruction, tool, amount, asset, recipient, payment_id, memo, decision, decision_reasons, confirmation_id, approved_by_key, decided_by, decided_at, status, object_id, tx_hash, error, leg, leg_id, reference, provider_reference, counterparty, batch_id. One line per movement, newest first: an action, or each leg of a revenue share and each transfer of a settlement batch (its leg column says 1 of 2, …), each with its action’s fields.',
      ),
    responseMediaType: 'text/csv',
  },
];

export function agentRoutes(env: ToolEnvironment, model: AgentModel, tools: readonly AnyTool[]): FastifyPluginAsync {
  return async (app) => {
    app.post('/agent/settle', { config: { auth: { scope: 'agent' } } }, async (request) => {
      const auth = requestAuth(request);
      const body = parseInput(settleBody, request.body);
      const header = request.headers['idempotency-key'];
      return runAgent(
        env,
        model,
        tools,
        { ...auth, channel: 'agent' },
        {
          instruction: body.instruction,
          dryRun: body.dry_run,
          idempotencyKey: body.idempotency_key ?? (typeof header === 'string' ? header : undefined),
        },
      );
    });

    app.post<{ Params: { id: string } }>(
      '/agent/runs/:id/reply',
      { config: { auth: { scope: 'agent' } } },
      async (request) => {
        const auth = requestAuth(request);
        const body = parseInput(replyBody, request.body);
        const header = request.headers['idempotency-key'];
        return replyToRun(env, model, tools, { ...auth, channel: 'agent' }, request.params.id, {
          message: body.message,
          idempotencyKey: body.idempotency_key ?? (typeof header === 'string' ? header : undefined),
        });
      },
    );

    app.get('/agent/runs', { config: { auth: { scope: 'agent' } } }, async (request) => {
      const auth = requestAuth(request);
      const query = parseInput(runsQuery, request.query);
      await expireUnansweredRuns(env, auth);
      const { status, ...pageRequest } = query;
      // A run the process left `running` (it stopped mid-run) is shown as failed, so it is listed as one.
      const statuses = status === 'failed' ? (['failed', 'running'] as const) : status;
      const page = await listRunsPage(env.db, auth, { status: statuses }, pageRequest);
      // The list shows runs without their actions and confirmations: one query for the page.
      const views = page.data.map((row) => {
        const { actions: _a, confirmations: _c, ...run } = presentRun(env, row, [], []);
        return run;
      });
      return { object: 'list', data: views, has_more: page.has_more };
    });

    app.get<{ Params: { id: string } }>(
      '/agent/runs/:id',
      { config: { auth: { scope: 'agent' } } },
      async (request) => {
        return loadRunView(env, requestAuth(request), request.params.id);
      },
    );

    app.get('/agent/actions', { config: { auth: { scope: 'agent' } } }, async (request) => {
      const { rows, has_more } = await listActions(env.db, requestAuth(request), request.query, env.clock.now());
      return { object: 'list', data: rows.map(presentAgentAction), has_more };
    });

    app.get<{ Params: { id: string } }>(
      '/agent/actions/:id',
      { config: { auth: { scope: 'agent' } } },
      async (request) => {
        const auth = requestAuth(request);
        const history = await loadActionHistory(env.db, auth, request.params.id);
        const [row] = await loadActionRows(env.db, [request.params.id], env.clock.now());
        return { ...presentAgentAction(row!), history };
      },
    );

    app.get('/agent/actions.csv', { config: { auth: { scope: 'agent' } } }, async (request, reply) => {
      const { rows } = await listActions(env.db, requestAuth(request), request.query, env.clock.now());
      reply
        .header('Content-Type', 'text/csv; charset=utf-8')
        .header('Content-Disposition', 'attachment; filename="agent-actions.csv"');
      return actionsCsv(env.db, rows);
    });
  };
}
