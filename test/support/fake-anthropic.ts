import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for the Anthropic Messages API (POST /v1/messages), driven by the real SDK
 * through baseURL. Only the edge is fake: the SDK, the loop and the pipeline are real.
 *
 * Like the real API, it first checks each request's structure and answers 400
 * `invalid_request_error` (401 `authentication_error` without a key) in the real error shape,
 * without consuming a scripted turn; a well-formed request gets the next scripted turn, which sees
 * the request and returns a message (any stop_reason) or an API error (429 with retry-after, 529,
 * 5xx). Every request is kept for assertions; rejected ones are also listed in `rejected`.
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
  | { type: 'tool_use'; id: string; name: string; input: unknown };

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

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
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
      const rejection = checkMessagesRequest(req.headers, body);
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
      send(res, 200, messageBody(out, recorded.body.model, served));
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
