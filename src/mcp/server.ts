import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type ServerRequest,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { stringifyJson } from '../core/json-text.ts';
import { presentAction } from '../agent/runtime.ts';
import { AppError, toAppError } from '../core/errors.ts';
import { executeTool } from '../pipeline/execute-tool.ts';
import { IDEMPOTENCY_KEY_PATTERN } from '../core/validation.ts';
import type { Actor, AnyTool, ToolEffect, ToolEnvironment } from '../core/tool.ts';
import { listRecentActions } from '../db/repositories/agent-actions.ts';
import { findPayment, listPayments } from '../db/repositories/payments.ts';
import type { AuthContext } from '../http/plugins/auth.ts';
import { presentPayment } from '../domain/present-payment.ts';
import type { ConfirmationRequired } from '../policy/confirmations.ts';
import { TOOLS } from '../../tools/registry.ts';
import type { AgentModel } from '../agent/model.ts';
import { agentModelFor } from '../agent/select-model.ts';
import { agentMcpTools } from './agent-tools.ts';

/**
 * The MCP server (docs/mcp.md): the tool catalogue for AI assistants, one McpServer per
 * connection, bound to one API key. See docs/mcp.md.
 *
 * Tools are served with the low-level request handlers rather than McpServer.registerTool, on
 * purpose: registerTool validates arguments with the zod schema itself and answers a bad call
 * before our pipeline sees it, so that call would not reach the action log, would not carry the
 * API's error types, and a tool outside the key's scopes would be "not found" instead of a
 * logged permission_error. Here every call of a catalogue tool goes through executeTool on the
 * `mcp` channel (validation, scope, policy, idempotent transaction, action log).
 */

export const MCP_SERVER_NAME = 'plainpay';
export const MCP_SERVER_VERSION = '0.1.0';

/** How long a held action waits for the client's answer to the "approve it there" prompt. */
const DEFAULT_ELICITATION_TIMEOUT_MS = 60_000;
const RECENT_ACTIONS_URI = 'plainpay://agent-actions/recent';
const RECENT_ACTIONS_LIMIT = 50;
const LISTED_PAYMENTS_LIMIT = 25;
/** JSON-RPC error code the MCP spec gives to "resource not found". */
const RESOURCE_NOT_FOUND = -32002;

export interface McpServerOptions {
  /** Upper bound on waiting for the client's answer to the held-action notice (default 60 s). */
  elicitationTimeoutMs?: number;
  /** The agent behind agent_settle / agent_reply (agent-tools.ts); default as the API host chooses it. */
  agentModel?: AgentModel;
}

/**
 * What a money tool returns when the policy holds it: not an error, and not the tool's output.
 * The outputSchema of money tools admits this shape too (anyOf), so clients that validate
 * structured content accept it.
 */
export const heldResultSchema = z
  .object({
    status: z.literal('confirmation_required').describe('The policy held this action for a human: nothing moved.'),
    confirmation_id: z.string().describe('The held action (conf_…).'),
    summary: z.string().describe('What would happen on approval, in one line.'),
    approve_url: z
      .string()
      .describe(
        'Where a person approves or rejects it (dashboard); or POST /v1/confirmations/:id/approve with an approvals key.',
      ),
    expires_at: z.string().describe('When the held action lapses if nobody decides.'),
    reasons: z
      .array(z.object({ rule: z.string(), outcome: z.string(), reason: z.string() }))
      .describe('Why the policy held it.'),
    follow_up: z
      .string()
      .describe(
        'How to learn how it ended: call get_confirmation with this confirmation_id (executed, rejected or expired, and what it created).',
      ),
  })
  .describe('A held action awaiting human approval.');

/**
 * Tool annotations from the tool's effect. They are hints for the client's UI (whether to ask
 * the user before calling); the policy, not the hint, is what guards money.
 */
export function annotationsFor(tool: Pick<AnyTool, 'title' | 'effect'>): ToolAnnotations {
  const byEffect: Record<ToolEffect, ToolAnnotations> = {
    read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    write: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    money: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  };
  return { title: tool.title, ...byEffect[tool.effect] };
}

/** The MCP tool definition of a catalogue tool: JSON Schemas from its zod input and output. */
export function mcpToolDefinition(tool: AnyTool): Tool {
  const output = tool.effect === 'money' ? z.union([tool.output, heldResultSchema]) : tool.output;
  const outputSchema = jsonSchema(output, 'output');
  return {
    name: tool.name,
    title: tool.title,
    description:
      tool.effect === 'money'
        ? `${tool.description} If the account policy holds it, the result is { status: "confirmation_required", confirmation_id, approve_url, expires_at, … }: nothing moved, only a person can approve it (not this client), and get_confirmation with that confirmation_id tells how it ended.`
        : tool.description,
    inputSchema: withIdempotencyKey(tool, { ...jsonSchema(tool.input, 'input'), type: 'object' }),
    // A union has no root type; MCP requires "object" there, which both branches are.
    outputSchema: { ...outputSchema, type: 'object' },
    annotations: annotationsFor(tool),
  };
}

const IDEMPOTENCY_KEY_PROPERTY = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: IDEMPOTENCY_KEY_PATTERN.source,
  description:
    'Send one with every money call, and the same one when you retry it: the same key returns the first result, so a retry never pays twice. Any 1 to 255 printable ASCII characters, new for each new action.',
};

/** Money tools take an idempotency key over MCP, beside their own fields (docs/mcp.md). */
function withIdempotencyKey(tool: AnyTool, schema: Tool['inputSchema']): Tool['inputSchema'] {
  if (tool.effect !== 'money') return schema;
  return { ...schema, properties: { ...schema.properties, idempotency_key: IDEMPOTENCY_KEY_PROPERTY } };
}

/**
 * The idempotency key of an MCP money call: the one the client sent, or none. Nothing is derived
 * from the JSON-RPC request id: ids are unique only while in flight (mcp/request-ids.ts), so a
 * request that reuses an id after its answer came is a new call, and a key derived from it would
 * hand that call the earlier one's answer, or refuse it. Throws for a malformed key.
 */
function idempotencyKeyOf(given: unknown): string | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(given)) {
    throw new AppError('invalid_request', 'idempotency_key must be 1 to 255 printable ASCII characters.', {
      param: 'idempotency_key',
    });
  }
  return given;
}

const definitionCache = new WeakMap<AnyTool, Tool>();
/** Schemas are built once per tool, not once per session. */
function cachedDefinition(tool: AnyTool): Tool {
  let definition = definitionCache.get(tool);
  if (!definition) {
    definition = mcpToolDefinition(tool);
    definitionCache.set(tool, definition);
  }
  return definition;
}

/** The catalogue tools this key may call: its scopes decide what it sees. */
export function visibleTools(auth: Pick<AuthContext, 'scopes'>): AnyTool[] {
  return TOOLS.filter((tool) => auth.scopes.has(tool.scope));
}

/** AuthInfo for the SDK's request context; the secret itself is never put in it. */
export function toAuthInfo(auth: AuthContext): AuthInfo {
  return {
    token: auth.keyId,
    clientId: auth.keyId,
    scopes: [...auth.scopes],
    extra: { plainpay: auth },
  };
}

/**
 * Builds the MCP server for one connection authenticated as `auth`. Over HTTP each request's
 * freshly checked key reaches the handlers as `extra.authInfo`; a session is bound to one key
 * (mcp/http.ts), so the two always name the same key.
 */
export function buildMcpServer(runtime: ToolEnvironment, auth: AuthContext, options: McpServerOptions = {}): McpServer {
  const elicitationTimeoutMs = options.elicitationTimeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS;
  const server = new McpServer(
    { name: MCP_SERVER_NAME, title: 'plainpay', version: MCP_SERVER_VERSION },
    {
      capabilities: { resources: {} },
      instructions:
        'plainpay: accept local-currency payments settled on-chain in USDC, and move money under the account policy. ' +
        'Money tools may return status "confirmation_required": nothing moved, and only a person can approve it at the approve_url ' +
        '(or with an approvals key); no answer from this client approves it. get_confirmation with its confirmation_id tells ' +
        'whether it was executed (and what it created), rejected or expired. Tool errors carry the API error type.',
    },
  );
  const agentTools = auth.scopes.has('agent')
    ? agentMcpTools(runtime, server, options.agentModel ?? agentModelFor(runtime.config), { elicitationTimeoutMs })
    : [];
  const definitions = [...visibleTools(auth).map(cachedDefinition), ...agentTools.map((tool) => tool.definition)];
  const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));

  server.server.registerCapabilities({ tools: { listChanged: false } });
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: definitions }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const agentTool = agentTools.find((tool) => tool.definition.name === request.params.name);
    if (agentTool) return agentTool.call(request.params.arguments ?? {}, authOf(extra, auth), extra);
    const tool = byName.get(request.params.name);
    // Not a catalogue tool at all: a protocol error, like any unknown method. A catalogue tool
    // this key may not use still runs through the pipeline, which refuses and logs it.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const caller = authOf(extra, auth);
    const actor: Actor = {
      accountId: caller.accountId,
      livemode: caller.livemode,
      keyId: caller.keyId,
      scopes: caller.scopes,
      channel: 'mcp',
      assistant: caller.assistant,
    };
    try {
      const { idempotency_key: givenKey, ...args } = request.params.arguments ?? {};
      const idempotencyKey = tool.effect === 'money' ? idempotencyKeyOf(givenKey) : undefined;
      // Only money tools take the key; elsewhere it stays in the arguments and validation names it.
      const input = tool.effect === 'money' ? args : (request.params.arguments ?? {});
      const result = await executeTool(tool, input, { runtime, actor, idempotencyKey });
      if (result.kind === 'executed') {
        return {
          content: [{ type: 'text', text: stringifyJson(result.output) }],
          structuredContent: result.output as Record<string, unknown>,
        };
      }
      if (result.kind === 'confirmation_required') {
        const told = await tellUserAboutHold(server, result.confirmation, extra, elicitationTimeoutMs);
        return heldResult(result.confirmation, told);
      }
      throw new Error(`an MCP call was ${result.kind} instead of executed`);
    } catch (error) {
      const appError = toAppError(error);
      if (appError.code === 'internal')
        runtime.logger.error({ err: appError.cause ?? error, tool: tool.name }, 'MCP tool call failed');
      // Text only: structured content would be checked against the tool's outputSchema.
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(appError.toBody()) }] };
    }
  });

  if (auth.scopes.has('payments:read')) registerPaymentResource(server, runtime, auth);
  if (auth.scopes.has('agent')) registerActionsResource(server, runtime, auth);
  return server;
}

function authOf(extra: RequestHandlerExtra<ServerRequest, ServerNotification>, fallback: AuthContext): AuthContext {
  const fromRequest = extra.authInfo?.extra?.plainpay as AuthContext | undefined;
  return fromRequest ?? fallback;
}

type ElicitationOutcome = 'accept' | 'decline' | 'cancel' | 'not_supported' | 'no_answer';

/**
 * Tells the user, through the client, that a person must approve the held action at its URL.
 * This is information only: whatever the client answers (accept, decline, cancel, or nothing),
 * the confirmation stays pending. Approval happens only through the confirmations API or the
 * dashboard, with a different key holding the approvals scope.
 */
async function tellUserAboutHold(
  server: McpServer,
  held: ConfirmationRequired,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  timeoutMs: number,
): Promise<ElicitationOutcome> {
  const capability = server.server.getClientCapabilities()?.elicitation;
  if (!capability) return 'not_supported';
  const message =
    `Held for approval: ${held.summary}. Nothing has moved. A person with an approvals key must approve it at ` +
    `${held.approve_url} before ${held.expires_at}. Answering this prompt does not approve or reject it.`;
  const params = capability.url
    ? { mode: 'url' as const, message, url: held.approve_url, elicitationId: held.confirmation_id }
    : { mode: 'form' as const, message, requestedSchema: { type: 'object' as const, properties: {} } };
  try {
    // Sent as part of this tool call (relatedRequestId), so it reaches the client on the call's stream.
    const answer = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema, {
      timeout: timeoutMs,
    });
    return answer.action;
  } catch {
    return 'no_answer';
  }
}

function heldResult(held: ConfirmationRequired, told: ElicitationOutcome): CallToolResult {
  const followUp = `Call get_confirmation with {"confirmation_id":"${held.confirmation_id}"} to learn whether it was executed (and what it created), rejected or expired.`;
  const structured: z.output<typeof heldResultSchema> = {
    status: held.status,
    confirmation_id: held.confirmation_id,
    summary: held.summary,
    approve_url: held.approve_url,
    expires_at: held.expires_at,
    reasons: held.reasons,
    follow_up: followUp,
  };
  const shown =
    told === 'accept' || told === 'decline' || told === 'cancel'
      ? ' The user was shown the approval link; their answer there does not approve it.'
      : '';
  return {
    content: [
      { type: 'text', text: stringifyJson(structured) },
      {
        type: 'text',
        text:
          `Not executed: the account policy holds "${held.summary}" for a person to approve (confirmation ${held.confirmation_id}, status ${held.status}). Nothing has moved. ` +
          `Ask the user to approve or reject it at ${held.approve_url} before it expires at ${held.expires_at}. ` +
          `You cannot approve it. ${followUp}${shown}`,
      },
    ],
    structuredContent: structured,
  };
}

function registerPaymentResource(server: McpServer, runtime: ToolEnvironment, auth: AuthContext): void {
  server.registerResource(
    'payment',
    new ResourceTemplate('payment://{id}', {
      list: async (extra) => {
        const caller = authOf(extra, auth);
        const rows = await listPayments(runtime.db, {
          accountId: caller.accountId,
          livemode: caller.livemode,
          limit: LISTED_PAYMENTS_LIMIT,
        });
        return {
          resources: rows.map((row) => ({
            uri: `payment://${row.id}`,
            name: row.id,
            title: `${row.id} (${row.status})`,
            mimeType: 'application/json',
          })),
        };
      },
    }),
    {
      title: 'Payment',
      description:
        'One payment of this account, as GET /v1/payments/:id returns it (read-only). Lists the most recent.',
      mimeType: 'application/json',
    },
    async (uri, variables, extra) => {
      const caller = authOf(extra, auth);
      const id = typeof variables.id === 'string' ? variables.id : '';
      const row = id ? await findPayment(runtime.db, caller, id) : undefined;
      // Another account's or mode's payment does not exist for this key.
      if (!row) throw new McpError(RESOURCE_NOT_FOUND, `No such payment: '${id}'.`, { uri: uri.href });
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: 'application/json',
            text: stringifyJson(presentPayment(runtime.config, row)),
          },
        ],
      };
    },
  );
}

function registerActionsResource(server: McpServer, runtime: ToolEnvironment, auth: AuthContext): void {
  server.registerResource(
    'recent-agent-actions',
    RECENT_ACTIONS_URI,
    {
      title: 'Recent agent actions',
      description: `The ${RECENT_ACTIONS_LIMIT} most recent recorded actions of this account (every channel: api money calls, agent, mcp), newest first (read-only).`,
      mimeType: 'application/json',
    },
    async (uri, extra) => {
      const caller = authOf(extra, auth);
      const rows = await listRecentActions(runtime.db, caller, RECENT_ACTIONS_LIMIT);
      const data = rows.map((row) => ({ ...presentAction(row), run_id: row.run_id, channel: row.channel }));
      return {
        contents: [{ uri: uri.href, mimeType: 'application/json', text: stringifyJson({ object: 'list', data }) }],
      };
    },
  );
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  // draft-07, as the SDK's own converter emits: the SDK client validates outputs with Ajv's default dialect.
  return z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
}
