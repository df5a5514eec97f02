import { z } from 'zod';

/**
 * An agent run as the API, the dashboard and the agent's MCP tools return it (runtime.ts,
 * loadRunView): the one schema behind its OpenAPI response and the MCP tools' outputSchema.
 */

const agentActionView = z.object({
  id: z.string().describe('Action id (act_…), as GET /agent/actions/:id reads it.'),
  object: z.literal('agent_action'),
  tool: z.string(),
  input: z.unknown(),
  decision: z.object({ outcome: z.string(), reasons: z.unknown() }),
  status: z.string().describe('executed, held, denied, failed, rejected (by a human) or planned (dry run).'),
  result: z.unknown(),
  error: z.unknown(),
  confirmation_id: z.string().nullable(),
  approved_by_key: z.string().nullable(),
  created: z.string(),
});

export const agentRunView = z.object({
  id: z.string().describe('Run id (run_…).'),
  object: z.literal('agent_run'),
  run_id: z.string().describe('Deprecated: the same as id. Sent until the next release; read id.'),
  status: z
    .enum(['completed', 'confirmation_required', 'rejected', 'failed', 'needs_input', 'cancelled', 'expired'])
    .describe(
      'needs_input: the run asked back and waits for an answer (POST /agent/runs/:id/reply); cancelled: the merchant answered no; expired: nobody answered in time. In all three nothing moved after the question.',
    ),
  reply: z.string().describe("The agent's answer for the user."),
  model: z.string(),
  dry_run: z.boolean(),
  instruction: z.string(),
  actions: z.array(agentActionView).describe('Every tool call of the run, as recorded.'),
  confirmations: z
    .array(
      z.object({
        id: z.string().describe('Confirmation id (conf_…): GET /v1/confirmations/:id reads it in full.'),
        object: z.literal('confirmation'),
        summary: z.string(),
        approve_url: z.string(),
        expires_at: z.string(),
      }),
    )
    .describe('The actions of the run the policy held, in brief.'),
  usage: z.unknown().describe('Model tokens (input, output, cache read, cache write); null for the offline planner.'),
  created: z.string(),
  conversation: z
    .array(z.object({ role: z.enum(['merchant', 'agent']), text: z.string(), created: z.string() }))
    .describe("Every turn: the merchant's instruction, then each question and answer, in order."),
  question: z
    .object({
      text: z.string().describe('What the agent asks.'),
      proposed_actions: z
        .array(z.object({ tool: z.string(), input: z.record(z.string(), z.unknown()) }))
        .describe(
          'The calls "yes" runs, exactly as shown (held: nothing runs before the answer). Empty when no reading is most likely.',
        ),
      answer_by: z.string().describe('When the run expires unanswered, moving nothing.'),
    })
    .nullable()
    .describe('Set while status is needs_input.'),
});
