import compress from '@fastify/compress';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type onRequestHookHandler,
} from 'fastify';
import { AppError } from '../core/errors.ts';
import type { ApiKeyScope } from '../domain/api-key-secret.ts';
import type { RateLimitDecision } from '../rate-limit/rate-limiter.ts';
import type { AgentModel } from '../agent/model.ts';
import type { Runtime } from '../runtime.ts';
import { type AuthContext, authenticateNow, requireScope } from './plugins/auth.ts';
import { handleFrameworkError, registerErrorHandling, sendError } from './plugins/errors.ts';
import { logEachRequest, randomRequestId, requestLoggerFactory } from './request-log.ts';
import { noSchemaCompilers } from './schema-compilers.ts';
import { installGracefulStop } from './graceful-stop.ts';
import { TOOLS } from '../../tools/registry.ts';
import { stringifyJson } from '../core/json-text.ts';
import { readJsonBody } from './json-body.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { agentModelFor } from '../agent/select-model.ts';
import { agentOperations, agentRoutes } from './routes/agent.ts';
import { auditOperations, auditRoutes } from './routes/audit.ts';
import { checkoutStatusOperations, checkoutStatusRoutes } from '../checkout/status-route.ts';
import { confirmationOperations, confirmationRoutes } from './routes/confirmations.ts';
import { policyOperations, policyRoutes } from './routes/policy.ts';
import { healthOperations, healthRoutes } from './routes/health.ts';
import { keyOperations, keyRoutes } from '../keys/routes.ts';
import { pingOperations, pingRoutes } from './routes/ping.ts';
import { paymentRailOperations, paymentRailRoutes } from './routes/payment-rails.ts';
import { railCallbackRoutes } from './routes/rail-callbacks.ts';
import { testHelperOperations, testHelperRoutes } from './routes/test-helpers.ts';
import { toolOperations, toolRoutes } from './routes/tool-routes.ts';
import { webhookEndpointOperations, webhookEndpointRoutes } from './routes/webhook-endpoints.ts';
import { webhookOperations, webhookRoutes } from './routes/webhooks.ts';
import { mcpRoutes } from '../mcp/http.ts';
import { dashboardRoutes } from '../dashboard/plugin.ts';
import { metricsPlugin } from '../metrics/plugin.ts';
import { reconciliationRoutes } from '../reconciliation/routes.ts';
import { x402Operations, x402Routes } from '../x402/routes.ts';

/**
 * The API host as a fastify instance, without listening (STYLE.md 8): tests drive it with
 * inject, the CLI listens. The checkout host is a separate instance (checkout/app.ts).
 */
export interface AppOptions {
  /** The agent's model; by default from config (Claude with a key, else the offline planner). */
  agentModel?: AgentModel;
}

export async function buildApp(runtime: Runtime, options: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = runtime;
  const app = Fastify({
    // Requests log through the runtime's logger (request-log.ts), fastify itself through none.
    logger: false,
    // One line per request is logged in onResponse below; fastify's two lines halve throughput.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory(runtime.logger),
    schemaController: noSchemaCompilers,
    bodyLimit: config.bodyLimitBytes,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomRequestId();
    },
    routerOptions: { ignoreTrailingSlash: true },
    trustProxy: false,
    // Routing errors fastify answers before any hook runs: the error object too (plugins/errors.ts).
    frameworkErrors: handleFrameworkError,
    // While stopping, graceful-stop.ts answers with the error object, not fastify's own 503 body.
    return503OnClosing: false,
  });
  // First of the onRequest hooks: a request refused while stopping never reaches auth or the database.
  installGracefulStop(app, {
    logger: runtime.logger,
    refuse: (request, reply, error) => sendError(reply.header('Request-Id', request.id), error),
  });

  app.decorateRequest('auth', null);
  // Tagged JSON (a caller's metadata) is written back as the caller wrote it.
  app.setReplySerializer((payload) => stringifyJson(payload));
  registerErrorHandling(app);
  // Before any route: the plugin adds its hook to each route as it is made. Answers of 1 KB or
  // more in a text or JSON type (/metrics and /openapi.json are over 100 KB) are sent br or gzip
  // when the client asks (Accept-Encoding); event streams are never compressed, and the MCP
  // stream is hijacked, out of its reach. Request bodies are not decompressed: BODY_LIMIT_BYTES
  // and the body rules (json-body.ts) apply to the bytes as sent.
  await app.register(compress, { global: true, globalDecompression: false, threshold: 1024 });

  // JSON only. fastify would also accept text/plain; the seed says writes are JSON, so any
  // other media type is a 415 error object. An empty body counts as no body. The bytes, not a
  // string: whether they are UTF-8 is one of the body rules (json-body.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, readJsonBody(body as Buffer, request.headers));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  admitByKey(app, runtime);

  logEachRequest(app, runtime.logger, 'request');

  await registerRoutes(app, runtime, options);
  return app;
}

/**
 * Authentication, the per-key rate limit and the scope, on every route whose config names `auth`.
 */
function admitByKey(app: FastifyInstance, runtime: Runtime): void {
  const touched = new Map<string, number>();
  let policy = { limit: -1, header: '' };
  /** The policy header, the same text for every request while the limit stays what it is. */
  const rateLimitPolicy = (limit: number): string => {
    if (policy.limit !== limit) policy = { limit, header: `"per-key";q=${limit};w=1` };
    return policy.header;
  };
  /**
   * Authenticates and counts the request: true to go on, false when it was answered (rate limited),
   * an AppError thrown when refused. A value, not a promise, while the key is cached and the limit
   * counted in-process (authenticateNow, the memory rate limiter): every API request passes here,
   * so the three steps are functions made once, and that path makes no closure per request.
   */
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ApiKeyScope | undefined,
  ): boolean | Promise<boolean> => {
    const auth = authenticateNow(runtime, request.headers.authorization, touched);
    return auth instanceof Promise
      ? auth.then((found) => count(request, reply, scope, found))
      : count(request, reply, scope, auth);
  };
  const count = (
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ApiKeyScope | undefined,
    auth: AuthContext,
  ): boolean | Promise<boolean> => {
    request.auth = auth;
    const counted = runtime.rateLimiter.hit(auth.keyId, runtime.clock.now().getTime());
    return counted instanceof Promise
      ? counted.then((decision) => judge(reply, scope, auth, decision))
      : judge(reply, scope, auth, counted);
  };
  const judge = (
    reply: FastifyReply,
    scope: ApiKeyScope | undefined,
    auth: AuthContext,
    decision: RateLimitDecision,
  ): boolean => {
    reply.header('ratelimit-policy', rateLimitPolicy(decision.limit));
    reply.header('ratelimit', `"per-key";r=${decision.remaining};t=${decision.resetSeconds}`);
    if (!decision.allowed) {
      reply.header('Retry-After', String(decision.resetSeconds));
      sendError(
        reply,
        new AppError(
          'rate_limited',
          `Too many requests with this API key: the limit is ${decision.limit} per second. Retry after ${decision.resetSeconds} s.`,
        ),
      );
      return false;
    }
    if (scope) requireScope(auth, scope);
    return true;
  };
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id);
    done();
  });
  // A route that needs a key gets its own auth hook, made when the route is added: the scope is
  // known then, and a request does not build fastify's route options to find it. As a route hook
  // it runs after every onRequest hook of the host and of the route's plugin (none of which may
  // rely on request.auth), and HEAD routes fastify adds for GET get it too. A callback hook,
  // so that a request decided at once costs no promise; done() is called once, outside the try
  // (what it runs next must not be mistaken for this hook's failure).
  app.addHook('onRoute', (route) => {
    const authConfig = route.config?.auth;
    if (!authConfig) return;
    const scope = authConfig.scope;
    const authHook: onRequestHookHandler = (request, reply, done) => {
      let admitted: boolean | Promise<boolean>;
      try {
        admitted = admit(request, reply, scope);
      } catch (error) {
        return done(error as Error);
      }
      if (admitted instanceof Promise) {
        admitted.then((goOn) => goOn && done(), done);
      } else if (admitted) {
        done();
      }
    };
    route.onRequest = [authHook, ...(route.onRequest === undefined ? [] : [route.onRequest].flat())];
  });
}

/** Every route of the API host, and /openapi.json that documents them. */
async function registerRoutes(app: FastifyInstance, runtime: Runtime, options: AppOptions): Promise<void> {
  const { config } = runtime;
  await app.register(metricsPlugin(runtime));
  await app.register(healthRoutes(runtime));
  await app.register(pingRoutes());
  await app.register(keyRoutes(runtime));
  await app.register(toolRoutes(runtime, TOOLS));
  await app.register(checkoutStatusRoutes(runtime));
  await app.register(testHelperRoutes(runtime));
  await app.register(confirmationRoutes(runtime, TOOLS));
  await app.register(policyRoutes(runtime, TOOLS));
  await app.register(
    agentRoutes(runtime, options.agentModel ?? agentModelFor(config, runtime.logger, runtime.clock.now()), TOOLS),
  );
  await app.register(auditRoutes(runtime));
  await app.register(webhookRoutes(runtime));
  await app.register(webhookEndpointRoutes(runtime));
  await app.register(paymentRailRoutes(runtime));
  await app.register(railCallbackRoutes(runtime));
  await app.register(mcpRoutes(runtime));
  await app.register(dashboardRoutes(runtime, TOOLS));
  await app.register(reconciliationRoutes(runtime));
  await app.register(x402Routes(runtime));

  // Built at the first request for it, not at start: about 40 ms of every start's CPU (zod's
  // JSON Schema of every operation), for a document most processes are never asked for.
  let openApi: Record<string, unknown> | undefined;
  app.get('/openapi.json', async () => {
    openApi ??= buildOpenApiDocument(
      [
        ...pingOperations,
        ...toolOperations(TOOLS),
        ...checkoutStatusOperations,
        ...testHelperOperations,
        ...keyOperations,
        ...confirmationOperations,
        ...policyOperations,
        ...agentOperations,
        ...auditOperations,
        ...webhookOperations,
        ...webhookEndpointOperations,
        ...paymentRailOperations,
        ...healthOperations,
        ...x402Operations,
      ],
      config.publicBaseUrl,
    );
    return openApi;
  });
}
