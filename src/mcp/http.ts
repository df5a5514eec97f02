import { randomUUID } from 'node:crypto';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { readJsonBody } from '../http/json-body.ts';
import type { AuthContext } from '../http/plugins/auth.ts';
import { requestAuth } from '../http/plugins/auth.ts';
import type { buildMcpServer, McpServerOptions } from './server.ts';
import { malformedMessage } from './messages.ts';
import { answeredIdOf, type JsonRpcId, RequestIdsInFlight, requestIdOf } from './request-ids.ts';
import { DEFAULT_MCP_SESSION_LIMITS, type McpSessionHandle, type McpSessionLimits, McpSessions } from './sessions.ts';

export interface McpRouteOptions extends McpServerOptions {
  limits?: Partial<McpSessionLimits>;
}

/**
 * What /mcp uses: the clock and logger its sessions keep time and report with, and what each
 * session's server is built with, which mcp/server.ts decides (today still the whole runtime).
 */
export type McpHttpServices = Parameters<typeof buildMcpServer>[0];

interface HttpSession extends McpSessionHandle {
  transport: StreamableHTTPServerTransport;
  requestIds: RequestIdsInFlight;
}

/**
 * The MCP SDK and our server on it, loaded by the first /mcp request rather than by every start:
 * with what they bring (ajv, hono) about 130 ms of a start's CPU, for a door most processes are
 * never knocked on.
 */
let mcpModules:
  | Promise<{
      StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
      isInitializeRequest: typeof import('@modelcontextprotocol/sdk/types.js').isInitializeRequest;
      server: typeof import('./server.ts');
    }>
  | undefined;
type McpModules = Awaited<NonNullable<typeof mcpModules>>;
function loadMcp(): Promise<McpModules> {
  if (!mcpModules) {
    const loading = Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('./server.ts'),
    ]).then(([transport, types, server]) => ({
      StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport,
      isInitializeRequest: types.isInitializeRequest,
      server,
    }));
    mcpModules = loading;
    // A load that failed (out of file descriptors, say) is tried again by the next request.
    loading.catch(() => {
      if (mcpModules === loading) mcpModules = undefined;
    });
  }
  return mcpModules;
}

/**
 * Streamable HTTP at /mcp on the API host (docs/mcp.md).
 *
 * - Every request carries the bearer API key: the app's auth hook checks it (401 with
 *   WWW-Authenticate when missing or invalid) and applies the per-key rate limit, exactly as for
 *   the REST API; the key's account and scopes reach the tool handlers as the SDK's authInfo.
 * - One transport + McpServer per session (the `mcp-session-id` header), bound to the key that
 *   opened it; sessions are bounded in number and idle time (mcp/sessions.ts).
 * - The body is parsed here, not by the app's JSON parser, so that transport-level problems
 *   (bad JSON, wrong media type, unknown session) answer as JSON-RPC errors the way the SDK's
 *   transport does, while authentication failures keep the API's error object.
 */
export function mcpRoutes(services: McpHttpServices, options: McpRouteOptions = {}): FastifyPluginAsync {
  return async (app) => {
    const limits = { ...DEFAULT_MCP_SESSION_LIMITS, ...options.limits };
    const sessions = new McpSessions<HttpSession>(limits, () => services.clock.now().getTime());
    const sweeper = setInterval(
      () => {
        sessions.sweep().catch((error) => services.logger.warn({ err: error }, 'MCP session sweep failed'));
      },
      Math.min(limits.idleMs, 60_000),
    );
    sweeper.unref();
    // preClose, not onClose: open SSE streams would keep the HTTP server from closing at all.
    app.addHook('preClose', async () => {
      clearInterval(sweeper);
      await sessions.closeAll();
    });

    // This plugin's own parsers (fastify encapsulation): the raw bytes of any body, parsed below.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    const openSession = async (mcp: McpModules, auth: AuthContext): Promise<HttpSession> => {
      const id = randomUUID();
      const server = mcp.server.buildMcpServer(services, auth, options);
      const transport = new mcp.StreamableHTTPServerTransport({ sessionIdGenerator: () => id });
      const session: HttpSession = {
        id,
        keyId: auth.keyId,
        transport,
        requestIds: new RequestIdsInFlight(),
        close: () => server.close(),
      };
      transport.onclose = () => sessions.remove(id);
      transport.onerror = (error) => services.logger.debug({ err: error, session: id }, 'MCP transport error');
      await server.connect(transport);
      watchRequestIds(transport, session.requestIds);
      sessions.add(session);
      return session;
    };

    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      config: { auth: {} },
      handler: async (request, reply) => {
        const auth = requestAuth(request);
        let mcp: McpModules;
        try {
          mcp = await loadMcp();
        } catch (error) {
          services.logger.error({ err: error }, 'the MCP SDK could not be loaded');
          return rpcError(reply, 500, -32603, 'Internal error');
        }
        let body: unknown;
        if (request.method === 'POST') {
          const read = readRpcBody(request, reply);
          if (!read.read) return read.answered;
          body = read.body;
        }

        const sessionHeader = request.headers['mcp-session-id'];
        let session: HttpSession | undefined;
        if (typeof sessionHeader === 'string') {
          session = sessions.get(sessionHeader, auth.keyId);
          if (!session) return rpcError(reply, 404, -32001, 'Session not found');
        } else if (request.method === 'POST' && mcp.isInitializeRequest(body)) {
          if (!(await sessions.admit(auth.keyId))) {
            reply.header('Retry-After', '30');
            return rpcError(reply, 503, -32000, 'Too many open MCP sessions on this server; retry later.');
          }
          session = await openSession(mcp, auth);
        } else {
          return rpcError(reply, 400, -32000, 'Bad Request: No valid session ID provided');
        }

        // An id still in flight in this session is refused before anything runs: the transport
        // would give the new request the old one's stream, and the answers would cross.
        const ids = request.method === 'POST' ? requestIdsIn(body) : [];
        const claim = session.requestIds.claim(ids);
        if ('refused' in claim) {
          return rpcError(
            reply,
            409,
            -32600,
            `Invalid Request: request id ${JSON.stringify(claim.refused)} is still in flight in this session; nothing was run. Use an id that is not in flight (an id is free again once its answer has come).`,
            ids.length === 1 ? claim.refused : null,
          );
        }

        // Hand the raw request to the SDK transport, keeping the headers set so far (Request-Id,
        // RateLimit). The transport writes the response, streaming when it answers with SSE.
        for (const [name, value] of Object.entries(reply.getHeaders())) {
          if (value !== undefined) reply.raw.setHeader(name, value);
        }
        reply.hijack();
        const done = sessions.track(session.id);
        reply.raw.on('close', done);
        const raw = request.raw as typeof request.raw & { auth?: ReturnType<McpModules['server']['toAuthInfo']> };
        raw.auth = mcp.server.toAuthInfo(auth);
        try {
          await session.transport.handleRequest(raw, reply.raw, body);
          // An initialize the transport refused (bad params) leaves a session that never started.
          if (session.transport.sessionId === undefined) {
            sessions.remove(session.id);
            await session.close();
          }
        } catch (error) {
          services.logger.error({ err: error }, 'MCP request failed');
          if (!reply.raw.headersSent) {
            reply.raw.writeHead(500, { 'content-type': 'application/json' });
            reply.raw.end(JSON.stringify(rpcBody(-32603, 'Internal error')));
          } else {
            reply.raw.end();
          }
        } finally {
          session.requestIds.finished(claim);
        }
      },
    });
  };
}

/**
 * A POST's body read as JSON-RPC under the API's body rules (UTF-8 only, no content encoding, no
 * lone surrogate), or the reply already answered with the JSON-RPC error that says why not.
 */
function readRpcBody(
  request: FastifyRequest,
  reply: FastifyReply,
): { read: true; body: unknown } | { read: false; answered: FastifyReply } {
  let body: unknown;
  const type = String(request.headers['content-type'] ?? '');
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    return refused(rpcError(reply, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json'));
  }
  try {
    // The API's body rules (UTF-8 only, no content encoding, no lone surrogate), as JSON-RPC errors.
    body = readJsonBody(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0), request.headers);
  } catch (error) {
    if (error instanceof AppError && error.code === 'unsupported_media_type') {
      return refused(rpcError(reply, 415, -32000, `Unsupported Media Type: ${error.message}`));
    }
    return refused(
      rpcError(reply, 400, -32700, `Parse error: ${error instanceof AppError ? error.message : 'Invalid JSON'}`),
    );
  }
  if (body === undefined) return refused(rpcError(reply, 400, -32700, 'Parse error: the body is empty'));
  const malformed = malformedMessage(body);
  if (malformed) return refused(rpcError(reply, malformed.status, malformed.code, malformed.message, malformed.id));
  if (repeatsARequestId(body)) {
    return refused(rpcError(reply, 400, -32600, 'Invalid Request: each request in a batch needs an id of its own'));
  }
  return { read: true, body };
}

function refused(answered: FastifyReply): { read: false; answered: FastifyReply } {
  return { read: false, answered };
}

/**
 * Keeps `ids` true to what the server does with each request of the session: a request is
 * dispatched when the transport hands it to the server, and answered when the server hands its
 * answer to the transport (the SDK's Protocol calls these on the transport object, so the wrappers
 * see every request and every answer, whatever handler ran).
 */
function watchRequestIds(transport: StreamableHTTPServerTransport, ids: RequestIdsInFlight): void {
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    try {
      await send(message, options);
    } finally {
      const answered = answeredIdOf(message);
      if (answered !== undefined) ids.answered(answered);
    }
  };
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const id = requestIdOf(message);
    if (id !== undefined) ids.dispatched(id);
    dispatch?.(message, extra);
  };
}

/** The ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIdsIn(body: unknown): JsonRpcId[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.map(requestIdOf).filter((id): id is JsonRpcId => id !== undefined);
}

/**
 * A JSON-RPC batch in which two requests share an id. The SDK's transport matches answers to their
 * request by id, and ends the batch's stream once every id has its answer: the first answer to a
 * shared id ended it, so a later request with that id still ran (a tool call, logged, perhaps
 * moving money) but its answer was lost. Refused whole, before anything runs.
 */
function repeatsARequestId(body: unknown): boolean {
  if (!Array.isArray(body)) return false;
  const ids = new Set<unknown>();
  for (const message of body) {
    if (typeof message !== 'object' || message === null || !('method' in message) || !('id' in message)) continue;
    if (ids.has(message.id)) return true;
    ids.add(message.id);
  }
  return false;
}

function rpcBody(code: number, message: string, id: JsonRpcId | null = null): unknown {
  return { jsonrpc: '2.0', error: { code, message }, id };
}

function rpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  id: JsonRpcId | null = null,
): FastifyReply {
  return reply
    .code(status)
    .type('application/json')
    .send(rpcBody(code, message, id));
}
