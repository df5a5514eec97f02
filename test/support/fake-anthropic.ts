import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';

/**
 * A local stand-in for the Anthropic Messages API (POST /v1/messages), driven by the real SDK
 * through baseURL. Only the edge is fake: the SDK, the loop and the pipeline are real.
 *
 * Like the real API, it first checks each request's structure and answers 400
 * `invalid_request_error` (401 `authentication_error` without a key) in the real error shape,
 * without consuming a scripted turn; a well-formed request gets the next scripted turn, which sees
 * the request and returns a message (any stop_reason) or an API error (429 with retry-after, 529,
 * 5xx). Every request is kept for assertions; rejected ones are also listed in `rejected`.
 *
 * Models, as the real API serves them:
 * - only the model names the pinned SDK lists (its `Model` union) are served; a name it does not
 *   list, or one past the retirement date in the SDK's own deprecated-models table (judged against
 *   the fake's clock, `now`), is a 404 `not_found_error` naming the model;
 * - the models that think by default (Sonnet 5 and later, Opus 5 and later, Fable, Mythos) refuse
 *   what their migration guides say returns 400: `thinking: {type: "disabled"}` and thinking budgets,
 *   non-default `temperature` / `top_p` / `top_k`, a final assistant turn (prefill), and forced tool
 *   use (`tool_choice` `any` or `tool`) on the 5.5 models;
 * - they answer with a `thinking` block first (display `omitted` by default: empty text and a
 *   signature). The signature binds the block to the model and to the conversation before it;
 *   a request that sends a thinking block back altered, under another model or after another
 *   prefix, or that drops the thinking blocks of the assistant turn whose tool results it sends,
 *   is a 400, as the real API answers it.
 */
export interface RecordedRequest {
  headers: Record<string, string | string[] | undefined>;
  body: {
    model: string;
    system: Array<{ type: string; text: string; cache_control?: unknown }>;
    tools: Array<{ name: string; description: string; input_schema: unknown; cache_control?: unknown }>;
    messages: Array<{ role: string; content: unknown }>;
    max_tokens: number;
  };
}

export type FakeContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  /** The fake signs it; a scripted one may give its (summarized) text. */
  | { type: 'thinking'; thinking: string };

export type FakeStopReason =
  | 'end_turn'
  | 'max_tokens'
  | 'stop_sequence'
  | 'tool_use'
  | 'pause_turn'
  | 'refusal'
  | 'model_context_window_exceeded';

/** A 200 answer: one assistant message. */
export interface ScriptedMessage {
  content: FakeContentBlock[];
  /**
   * For a model that thinks by default, the fake puts an omitted-display thinking block first
   * unless the script gives its own thinking block or sets this to false.
   */
  thinking?: boolean;
  stop_reason: FakeStopReason;
  stop_sequence?: string | null;
  /** For a `refusal` stop: what the real API reports in `stop_details`. */
  refusal?: { category?: string | null; explanation?: string | null };
  usage?: Partial<{
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  }>;
}

/** An error answer, in the real shape `{"type":"error","error":{type,message},"request_id"}`. */
export interface ScriptedError {
  status: number;
  error: { type: string; message: string; details?: Record<string, unknown> };
  headers?: Record<string, string>;
}

export type ScriptedTurn = (request: RecordedRequest) => ScriptedMessage | ScriptedError;

export interface Rejection {
  status: number;
  error: { type: string; message: string };
}

export interface FakeAnthropic {
  url: string;
  /** Every request received since the last `script` call, well-formed or not, in order. */
  requests: RecordedRequest[];
  /** The requests answered 400/401 by the structure checks, with the error they got. */
  rejected: Array<{ request: RecordedRequest; rejection: Rejection }>;
  script(turns: ScriptedTurn[]): void;
  close(): Promise<void>;
}

/** 429 `rate_limit_error` with a `retry-after` header (seconds), as the API answers a rate limit. */
export function rateLimited(retryAfterSeconds = 1): ScriptedTurn {
  return () => ({
    status: 429,
    error: {
      type: 'rate_limit_error',
      message: 'This request would exceed the rate limit for your organization of 50 output tokens per minute.',
    },
    headers: { 'retry-after': String(retryAfterSeconds), 'anthropic-ratelimit-requests-remaining': '0' },
  });
}

/** 429 for a reached monthly spend limit: no retry-after, and waiting does not help. */
export function spendLimitReached(): ScriptedTurn {
  return () => ({
    status: 429,
    error: {
      type: 'rate_limit_error',
      message: 'Your organization has reached its monthly spend limit.',
      details: { error_code: 'enforced_spend_limit_reached' },
    },
  });
}

/** 529 `overloaded_error`: the API is busy for everyone; retryable. */
export function overloaded(): ScriptedTurn {
  return () => ({ status: 529, error: { type: 'overloaded_error', message: 'Overloaded' } });
}

/** 500 `api_error`: an unexpected error inside the API; retryable. */
export function serverError(): ScriptedTurn {
  return () => ({ status: 500, error: { type: 'api_error', message: 'Internal server error' } });
}

export interface FakeAnthropicOptions {
  /** The fake's clock for retirement dates; default the real date. */
  now?: () => Date;
}

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const now = options.now ?? (() => new Date());
  // Per fake: a signature made by one fake server is not valid on another, as one account's
  // thinking blocks are not readable by another's.
  const signingKey = randomBytes(32);
  /** The thinking blocks sent with each tool_use id, to check they come back with it unchanged. */
  const thinkingByToolUse = new Map<string, Block[]>();
  /** Content of pause_turn answers: the one kind of final assistant turn the API continues. */
  const paused = new Set<string>();
  const requests: RecordedRequest[] = [];
  const rejected: FakeAnthropic['rejected'] = [];
  let turns: ScriptedTurn[] = [];
  let served = 0;
  let answered = 0;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    answered += 1;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${answered}`, ...headers });
    res.end(JSON.stringify(body));
  };
  const sendError = (
    res: ServerResponse,
    status: number,
    error: ScriptedError['error'],
    headers: Record<string, string> = {},
  ) => send(res, status, { type: 'error', error, request_id: `req_fake_${answered + 1}` }, headers);

  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/messages') {
        sendError(res, 404, { type: 'not_found_error', message: 'Not found' });
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        sendError(res, 400, { type: 'invalid_request_error', message: 'The request body is not valid JSON.' });
        return;
      }
      const recorded: RecordedRequest = { headers: req.headers, body: body as RecordedRequest['body'] };
      requests.push(recorded);
      const rejection =
        checkMessagesRequest(req.headers, body) ??
        checkModel(recorded.body.model, now()) ??
        checkThinkingModelRequest(body as Record<string, unknown>, paused) ??
        checkThinkingBlocks(recorded.body, signingKey, thinkingByToolUse);
      if (rejection) {
        rejected.push({ request: recorded, rejection });
        sendError(res, rejection.status, rejection.error);
        return;
      }
      const turn = turns.shift();
      if (!turn) {
        // A test bug, not an outage: say so, and tell the client not to retry it.
        sendError(res, 500, { type: 'api_error', message: 'script exhausted' }, { 'x-should-retry': 'false' });
        return;
      }
      let out: ScriptedMessage | ScriptedError;
      try {
        out = turn(recorded);
      } catch (error) {
        // An assertion inside a scripted turn failed: answer (so the run does not hang) and rethrow
        // outside the request so the test run reports it.
        sendError(
          res,
          400,
          { type: 'invalid_request_error', message: `fake script: ${String(error)}` },
          { 'x-should-retry': 'false' },
        );
        setImmediate(() => {
          throw error;
        });
        return;
      }
      if ('status' in out) {
        sendError(res, out.status, out.error, out.headers);
        return;
      }
      served += 1;
      const content = withThinking(out, recorded.body, signingKey);
      for (const block of content) {
        if (block.type === 'tool_use') {
          thinkingByToolUse.set(
            String(block.id),
            content.filter((b) => b.type === 'thinking'),
          );
        }
      }
      if (out.stop_reason === 'pause_turn') paused.add(JSON.stringify(content));
      send(res, 200, messageBody({ ...out, content: content as FakeContentBlock[] }, recorded.body.model, served));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    rejected,
    script(next) {
      turns = [...next];
      thinkingByToolUse.clear();
      paused.clear();
      requests.length = 0;
      rejected.length = 0;
      served = 0;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A Messages API `message` object, with the `usage` fields the real API returns. */
function messageBody(out: ScriptedMessage, model: string, served: number): Record<string, unknown> {
  // The first message of a script writes the prompt cache; later ones read it.
  const cacheCreation = out.usage?.cache_creation_input_tokens ?? (served === 1 ? 900 : 0);
  return {
    id: `msg_fake_${served}`,
    type: 'message',
    role: 'assistant',
    model,
    content: out.content,
    stop_reason: out.stop_reason,
    stop_sequence: out.stop_sequence ?? null,
    stop_details:
      out.stop_reason === 'refusal'
        ? { type: 'refusal', category: out.refusal?.category ?? null, explanation: out.refusal?.explanation ?? null }
        : null,
    usage: {
      input_tokens: out.usage?.input_tokens ?? 100,
      output_tokens: out.usage?.output_tokens ?? 20,
      cache_creation_input_tokens: cacheCreation,
      cache_read_input_tokens: out.usage?.cache_read_input_tokens ?? (served > 1 ? 900 : 0),
      cache_creation: { ephemeral_5m_input_tokens: cacheCreation, ephemeral_1h_input_tokens: 0 },
      server_tool_use: null,
      service_tier: 'standard',
    },
  };
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_CACHE_BREAKPOINTS = 4;

type Block = Record<string, unknown> & { type: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function blocksOf(content: unknown): Block[] {
  return Array.isArray(content) ? (content.filter((b) => isRecord(b) && typeof b.type === 'string') as Block[]) : [];
}

function toolUseIds(message: unknown): string[] {
  if (!isRecord(message) || message.role !== 'assistant') return [];
  return blocksOf(message.content)
    .filter((b) => b.type === 'tool_use')
    .map((b) => String(b.id));
}

function invalid(message: string): Rejection {
  return { status: 400, error: { type: 'invalid_request_error', message } };
}

/**
 * The checks the real Messages API makes before it runs a model, with its wording where known.
 * One difference: the real API merges consecutive same-role turns; the fake refuses them, so the
 * adapter never relies on that merging (it must send all of one turn's tool results together).
 */
export function checkMessagesRequest(headers: IncomingHttpHeaders, body: unknown): Rejection | undefined {
  // SDK 1.x sends the key as `Authorization: Bearer`; older clients and curl use `x-api-key`.
  if (!headers['x-api-key'] && !headers.authorization) {
    return { status: 401, error: { type: 'authentication_error', message: 'x-api-key header is required' } };
  }
  if (!headers['anthropic-version']) return invalid('anthropic-version: header is required');
  if (!isRecord(body)) return invalid('Input should be a valid dictionary');
  if (typeof body.model !== 'string' || body.model === '') return invalid('model: Field required');
  if (body.max_tokens === undefined) return invalid('max_tokens: Field required');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    return invalid('max_tokens: Input should be a valid integer greater than or equal to 1');
  }
  if (body.stream === true) return invalid('stream: this fake answers non-streaming requests only');

  let cacheBreakpoints = 0;
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) return invalid('system: Input should be a valid string or list');
    for (const [i, block] of body.system.entries()) {
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string' || block.text === '') {
        return invalid(`system.${i}: text content blocks must be non-empty`);
      }
      if (block.cache_control) cacheBreakpoints += 1;
    }
  }

  const tools = body.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return invalid('tools: Input should be a valid list');
    const names = new Set<string>();
    for (const [i, tool] of tools.entries()) {
      if (!isRecord(tool)) return invalid(`tools.${i}: Input should be a valid dictionary`);
      if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) {
        return invalid(`tools.${i}.custom.name: String should match pattern '${TOOL_NAME.source}'`);
      }
      if (names.has(tool.name)) return invalid('tools: Tool names must be unique.');
      names.add(tool.name);
      if (tool.description !== undefined && typeof tool.description !== 'string') {
        return invalid(`tools.${i}.custom.description: Input should be a valid string`);
      }
      if (!isRecord(tool.input_schema)) return invalid(`tools.${i}.custom.input_schema: Field required`);
      if (tool.input_schema.type !== 'object')
        return invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
      if (tool.cache_control) cacheBreakpoints += 1;
    }
  }

  const messages = body.messages;
  if (!Array.isArray(messages)) return invalid('messages: Field required');
  if (messages.length === 0) return invalid('messages: at least one message is required');
  const seenToolUse = new Set<string>();
  let usesTools = false;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) {
      return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    const { role, content } = message;
    if (i === 0 && role !== 'user') return invalid('messages: first message must use the "user" role');
    const previous = i > 0 ? (messages[i - 1] as Record<string, unknown>) : undefined;
    if (previous?.role === role) {
      return invalid(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`,
      );
    }
    const finalAssistant = role === 'assistant' && i === messages.length - 1;
    if (typeof content === 'string') {
      if (content === '' && !finalAssistant) {
        return invalid(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
      }
      continue;
    }
    if (!Array.isArray(content)) return invalid(`messages.${i}.content: Input should be a valid string or list`);
    if (content.length === 0 && !finalAssistant) {
      return invalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
    const blocks = blocksOf(content);
    if (blocks.length !== content.length) return invalid(`messages.${i}.content: every block needs a type`);
    cacheBreakpoints += blocks.filter((b) => b.cache_control).length;

    if (role === 'assistant') {
      for (const [j, block] of blocks.entries()) {
        if (block.type === 'tool_result') {
          return invalid(`messages.${i}.content.${j}: \`tool_result\` blocks can only be in \`user\` messages`);
        }
        if (block.type !== 'tool_use') continue;
        usesTools = true;
        if (typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input)) {
          return invalid(`messages.${i}.content.${j}.tool_use: id, name and an object input are required`);
        }
        if (seenToolUse.has(block.id)) return invalid(`messages.${i}.content.${j}: \`tool_use\` ids must be unique`);
        seenToolUse.add(block.id);
      }
      const ids = toolUseIds(message);
      const next = messages[i + 1];
      if (ids.length > 0 && next !== undefined) {
        const answered = new Set(
          blocksOf(isRecord(next) ? next.content : undefined)
            .filter((b) => b.type === 'tool_result')
            .map((b) => String(b.tool_use_id)),
        );
        const missing = ids.filter((id) => !answered.has(id));
        if (missing.length > 0) {
          return invalid(
            `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
          );
        }
      }
      continue;
    }

    // A user message: its tool_result blocks answer the assistant message just before, come first,
    // and answer each tool_use once.
    const expected = new Set(toolUseIds(previous));
    const answered = new Set<string>();
    let otherSeen = false;
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'tool_use') {
        return invalid(`messages.${i}.content.${j}: \`tool_use\` blocks can only be in \`assistant\` messages`);
      }
      if (block.type !== 'tool_result') {
        otherSeen = true;
        continue;
      }
      usesTools = true;
      const id = block.tool_use_id;
      if (typeof id !== 'string' || !expected.has(id)) {
        return invalid(
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
      if (answered.has(id)) {
        return invalid(`messages.${i}.content.${j}: each \`tool_use\` must have a single \`tool_result\`: ${id}`);
      }
      answered.add(id);
      if (otherSeen) {
        return invalid(`messages.${i}.content.${j}: \`tool_result\` blocks must come before any other content`);
      }
      if (block.is_error !== undefined && typeof block.is_error !== 'boolean') {
        return invalid(`messages.${i}.content.${j}.tool_result.is_error: Input should be a valid boolean`);
      }
    }
  }
  if (usesTools && (!Array.isArray(tools) || tools.length === 0)) {
    return invalid('Requests which include `tool_use` or `tool_result` blocks must define tools.');
  }
  if (cacheBreakpoints > MAX_CACHE_BREAKPOINTS) {
    return invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${cacheBreakpoints}.`,
    );
  }
  return undefined;
}

/** The last tool_result blocks the model was sent. */
export function lastToolResults(
  request: RecordedRequest,
): Array<{ tool_use_id: string; content: string; is_error?: boolean }> {
  const last = request.body.messages.at(-1);
  return Array.isArray(last?.content)
    ? (last.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>)
    : [];
}

// ---------------------------------------------------------------------------------------------
// Models: which names are served, what the thinking models refuse, and their thinking blocks
// ---------------------------------------------------------------------------------------------

const sdkDir = dirname(createRequire(import.meta.url).resolve('@anthropic-ai/sdk'));

/**
 * The model names the pinned @anthropic-ai/sdk lists (its `Model` union, the provider's own
 * published list at that version) and the retirement dates of its deprecated-models table. Read
 * from the installed SDK, so the fake follows the SDK when it is upgraded, not our own table.
 */
export const SDK_MODELS: readonly string[] = [
  ...readFileSync(join(sdkDir, 'resources/messages/messages.d.ts'), 'utf8')
    .match(/export type Model = ([^;]+);/)![1]!
    .matchAll(/'([^']+)'/g),
].map((m) => m[1]!);

export const SDK_RETIREMENTS: Readonly<Record<string, Date>> = Object.fromEntries(
  Object.entries(
    createRequire(import.meta.url)(join(sdkDir, 'internal/data/deprecated-models.js')).DEPRECATED_MODELS as Record<
      string,
      string
    >,
  ).map(([model, date]) => [model, new Date(`${date.replace(/(\d+)(st|nd|rd|th)/, '$1')} UTC`)]),
);

/** The models that think by default and refuse the settings their migration guides list. */
function thinksByDefault(model: string): boolean {
  return /^claude-(sonnet|opus|haiku)-5(-|$)|^claude-(fable|mythos)-5/.test(model);
}

function isFiveFive(model: string): boolean {
  return /-5-5$/.test(model);
}

function checkModel(model: string, now: Date): Rejection | undefined {
  const retires = SDK_RETIREMENTS[model];
  if (!SDK_MODELS.includes(model) || (retires !== undefined && now.getTime() >= retires.getTime())) {
    return { status: 404, error: { type: 'not_found_error', message: `model: ${model}` } };
  }
  return undefined;
}

function checkThinkingModelRequest(body: Record<string, unknown>, paused: Set<string>): Rejection | undefined {
  const model = String(body.model);
  if (!thinksByDefault(model)) return undefined;
  const thinking = isRecord(body.thinking) ? body.thinking : undefined;
  if (thinking?.type === 'disabled') {
    return invalid(
      isFiveFive(model) && model.includes('sonnet')
        ? '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" to turn off up-front thinking.'
        : '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    );
  }
  if (thinking?.type === 'enabled' || thinking?.budget_tokens !== undefined) {
    return invalid(
      '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    );
  }
  for (const name of ['temperature', 'top_p', 'top_k'] as const) {
    if (body[name] !== undefined && !(name === 'temperature' && body[name] === 1)) {
      return invalid(`${name}: sampling parameters are not supported for this model`);
    }
  }
  const effort = isRecord(body.output_config) ? body.output_config.effort : undefined;
  if (effort !== undefined && !['low', 'medium', 'high', 'xhigh', 'max'].includes(String(effort))) {
    return invalid("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
  }
  if (isFiveFive(model)) {
    const choice = isRecord(body.tool_choice) ? body.tool_choice.type : undefined;
    if (choice === 'any' || choice === 'tool') {
      return invalid('tool_choice: forced tool use is not supported for this model; use "auto" or "none".');
    }
  }
  // A paused turn (server tools) is continued by sending it back as the last assistant turn; any
  // other final assistant turn is a prefill.
  const last = Array.isArray(body.messages) ? body.messages.at(-1) : undefined;
  if (isRecord(last) && last.role === 'assistant' && !paused.has(JSON.stringify(last.content))) {
    return invalid(
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    );
  }
  return undefined;
}

/** The signature of a thinking block: the model, the conversation before its turn, and its text. */
function signThinking(key: Buffer, model: string, prefix: unknown[], thinking: string): string {
  return createHmac('sha256', key)
    .update(JSON.stringify([model, prefix, thinking]))
    .digest('base64');
}

function withThinking(out: ScriptedMessage, body: RecordedRequest['body'], key: Buffer): Block[] {
  const content = out.content as Block[];
  const scripted = content.some((b) => b.type === 'thinking');
  const auto = thinksByDefault(body.model) && out.thinking !== false && !scripted;
  const blocks = auto ? [{ type: 'thinking', thinking: '' } as Block, ...content] : content;
  return blocks.map((block) =>
    block.type === 'thinking'
      ? {
          type: 'thinking',
          thinking: String(block.thinking),
          signature: signThinking(key, body.model, body.messages, String(block.thinking)),
        }
      : block,
  );
}

/**
 * Thinking blocks sent back must be the fake's own, unchanged, under the same model and after the
 * same conversation; and the assistant turn whose tool results a request sends must carry the
 * thinking blocks it was answered with (the API needs them to continue a tool-use turn).
 */
function checkThinkingBlocks(
  body: RecordedRequest['body'],
  key: Buffer,
  thinkingByToolUse: Map<string, Block[]>,
): Rejection | undefined {
  for (const [i, message] of body.messages.entries()) {
    if (message.role !== 'assistant') continue;
    const blocks = blocksOf(message.content);
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'redacted_thinking') continue;
      if (block.type !== 'thinking') continue;
      const expected = signThinking(key, body.model, body.messages.slice(0, i), String(block.thinking));
      if (block.signature !== expected) {
        return invalid(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
      }
    }
    const last = body.messages.slice(i + 1).every((m) => m.role !== 'assistant');
    if (!last) continue;
    for (const use of blocks.filter((b) => b.type === 'tool_use')) {
      const sent = thinkingByToolUse.get(String(use.id)) ?? [];
      const kept = blocks.filter((b) => b.type === 'thinking');
      if (JSON.stringify(kept) !== JSON.stringify(sent)) {
        return invalid(
          `messages.${i}.content: the thinking blocks of an assistant turn with tool_use must be passed back unchanged when you send its tool results`,
        );
      }
    }
  }
  return undefined;
}
