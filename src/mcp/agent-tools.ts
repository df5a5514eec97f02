import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  ElicitResultSchema,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentModel } from '../agent/model.ts';
import { agentRunView } from '../agent/run-view.ts';
import { type AgentRunView, loadRunView, replyToRun, runAgent } from '../agent/runtime.ts';
import { stringifyJson } from '../core/json-text.ts';
import { AppError, toAppError } from '../core/errors.ts';
import { parseInput } from '../core/validation.ts';
import type { Actor, ToolEnvironment } from '../core/tool.ts';
import type { AuthContext } from '../http/plugins/auth.ts';
import { TOOLS } from '../../tools/registry.ts';

/**
 * The agent over MCP (docs/mcp.md, docs/agent.md "The conversation"): `agent_settle` runs the
 * agent on a plain-language instruction, as POST /agent/settle does, and `agent_reply` answers a
 * run that asked back, as POST /agent/runs/:id/reply does. They are not catalogue tools: the agent
 * calls the catalogue itself, each call through the pipeline on the agent channel.
 *
 * When a run asks back and the client declared the elicitation capability, the question goes to
 * the user by elicitation (form mode, one text field) inside the same tool call, and their answer
 * continues the run: it is the merchant's text of the conversation, judged by grounding and policy
 * like a first instruction (a held action still needs a person with an approvals key). Without
 * the capability, or when the user dismisses the prompt, the result carries the question and the
 * run id, and `agent_reply` answers it.
 */

/** Questions asked by elicitation within one tool call; then the run is left waiting for agent_reply. */
const MAX_ELICITED_ANSWERS = 5;

const settleInput = z.strictObject({
  instruction: z
    .string({ error: 'instruction must be a string' })
    .trim()
    .min(1, 'instruction must not be empty')
    .max(4000, 'instruction must be at most 4000 characters')
    .describe('What to do, in plain words, e.g. "pay out 250 USDC to 0x… for invoice 42".'),
  idempotency_key: z
    .string({ error: 'idempotency_key must be a string' })
    .min(1)
    .max(255)
    .optional()
    .describe('The same key with the same instruction runs once and returns the first run.'),
});

const replyInput = z.strictObject({
  run_id: z.string({ error: 'run_id must be a string' }).min(1).describe('The run that asked (run_…).'),
  message: z
    .string({ error: 'message must be a string' })
    .trim()
    .min(1, 'message must not be empty')
    .max(4000, 'message must be at most 4000 characters')
    .describe(
      'The merchant\'s answer: "yes" runs the proposed actions as shown, a new amount runs them with it, "no" cancels, anything else continues the conversation.',
    ),
  idempotency_key: z
    .string({ error: 'idempotency_key must be a string' })
    .min(1)
    .max(255)
    .optional()
    .describe('The same key with the same message is the same answer: a replay runs nothing again.'),
});

export interface AgentMcpTool {
  definition: Tool;
  call(
    args: unknown,
    caller: AuthContext,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  ): Promise<CallToolResult>;
}

/** The agent's MCP tools for a key with the `agent` scope. */
export function agentMcpTools(
  runtime: ToolEnvironment,
  server: McpServer,
  model: AgentModel,
  options: { elicitationTimeoutMs: number },
): AgentMcpTool[] {
  const actorOf = (caller: AuthContext): Actor => ({
    accountId: caller.accountId,
    livemode: caller.livemode,
    keyId: caller.keyId,
    scopes: caller.scopes,
    channel: 'agent',
    // An assistant's key is held to the assistant's limits on the agent too (policy/engine.ts,
    // judgingChannels), as over POST /agent/settle.
    assistant: caller.assistant,
  });
  const answered = async (
    run: AgentRunView,
    caller: AuthContext,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  ): Promise<CallToolResult> => {
    let current = run;
    for (let asked = 0; asked < MAX_ELICITED_ANSWERS && current.status === 'needs_input'; asked++) {
      const answer = await elicitAnswer(server, current, extra, options.elicitationTimeoutMs);
      if (answer === undefined) break;
      try {
        current = await replyToRun(runtime, model, TOOLS, actorOf(caller), current.run_id, {
          message: answer,
          idempotencyKey: undefined,
        });
      } catch (error) {
        // Answered meanwhile on another channel (POST /agent/runs/:id/reply), or expired: what the
        // run did is the answer to this call, never an error that reads as "nothing happened".
        if (!(error instanceof AppError) || error.code !== 'conflict') throw error;
        current = await loadRunView(runtime, actorOf(caller), current.run_id);
        break;
      }
    }
    return runResult(current);
  };
  return [
    {
      definition: {
        name: 'agent_settle',
        title: 'Instruct the agent',
        description:
          'Runs the plainpay agent on one plain-language instruction (payouts, refunds, splits, payments and reads), as POST /agent/settle. Every call it makes goes through the account policy. If it cannot act, it asks back: by elicitation when the client supports it, else the result has status "needs_input", the question and the run_id; answer with agent_reply.',
        inputSchema: jsonSchema(settleInput),
        outputSchema: RUN_OUTPUT_SCHEMA,
        annotations: { title: 'Instruct the agent', readOnlyHint: false, destructiveHint: true, openWorldHint: true },
      },
      call: async (args, caller, extra) => {
        try {
          const input = parseInput(settleInput, args);
          const run = await runAgent(runtime, model, TOOLS, actorOf(caller), {
            instruction: input.instruction,
            dryRun: false,
            // Only the client's key makes a retry the same run: a JSON-RPC id is unique only while in
            // flight (mcp/request-ids.ts), so a key derived from it would hand a later call an
            // earlier run's answer.
            idempotencyKey: input.idempotency_key,
          });
          return await answered(run, caller, extra);
        } catch (error) {
          return errorResult(error);
        }
      },
    },
    {
      definition: {
        name: 'agent_reply',
        title: "Answer the agent's question",
        description:
          'Answers a run that asked back (status needs_input), as POST /agent/runs/:id/reply: "yes" runs the proposed actions exactly as shown, a new amount ("make it 2000") runs them with that amount, "no" cancels, anything else continues the conversation. Nothing moved before the answer; the policy still applies.',
        inputSchema: jsonSchema(replyInput),
        outputSchema: RUN_OUTPUT_SCHEMA,
        annotations: {
          title: "Answer the agent's question",
          readOnlyHint: false,
          destructiveHint: true,
          openWorldHint: true,
        },
      },
      call: async (args, caller, extra) => {
        try {
          const input = parseInput(replyInput, args);
          const run = await replyToRun(runtime, model, TOOLS, actorOf(caller), input.run_id, {
            message: input.message,
            idempotencyKey: input.idempotency_key,
          });
          return await answered(run, caller, extra);
        } catch (error) {
          return errorResult(error);
        }
      },
    },
  ];
}

/**
 * Asks the user the run's question through the client (form mode, one text field) within this
 * tool call. Their text, when they accept; undefined when the client cannot elicit, or the user
 * declined, dismissed or did not answer in time: the run then keeps waiting for agent_reply.
 */
async function elicitAnswer(
  server: McpServer,
  run: AgentRunView,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  timeoutMs: number,
): Promise<string | undefined> {
  if (!server.server.getClientCapabilities()?.elicitation || run.question === null) return undefined;
  const params = {
    mode: 'form' as const,
    message: run.question.text,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        answer: {
          type: 'string' as const,
          title: 'Your answer',
          description: '"yes" runs what is proposed, a new amount runs it with that amount, "no" cancels.',
          minLength: 1,
          maxLength: 4000,
        },
      },
      required: ['answer'],
    },
  };
  try {
    // Sent as part of this tool call (relatedRequestId), so it reaches the client on the call's stream.
    const result = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema, {
      timeout: timeoutMs,
    });
    const answer = result.action === 'accept' ? result.content?.answer : undefined;
    return typeof answer === 'string' && answer.trim() !== '' ? answer : undefined;
  } catch {
    return undefined;
  }
}

function runResult(run: AgentRunView): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: stringifyJson(run) }];
  if (run.status === 'needs_input' && run.question !== null) {
    content.push({
      type: 'text',
      text: `The agent asks (nothing has moved): ${run.question.text}\nAnswer with agent_reply {"run_id":"${run.run_id}","message":"…"} before ${run.question.answer_by}.`,
    });
  }
  return { content, structuredContent: run as unknown as Record<string, unknown> };
}

function errorResult(error: unknown): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(toAppError(error).toBody()) }] };
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): Tool['inputSchema'] {
  // draft-07, as the SDK's own converter emits: the SDK client validates outputs with Ajv's default dialect.
  const json = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  return { ...json, type: 'object' } as Tool['inputSchema'];
}

/** Both tools return the run, as GET /agent/runs/:id does: the same schema as the API's. */
const RUN_OUTPUT_SCHEMA = jsonSchema(agentRunView, 'output') as NonNullable<Tool['outputSchema']>;
