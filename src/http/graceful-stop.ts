import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { RunningRequests } from './running-requests.ts';

/**
 * The graceful stop of one HTTP host (docs/operations.md, "Rolling deploys / shutdown"). From the
 * moment it begins:
 *
 * - no new connection is accepted (the listener closes);
 * - a request already received runs to its end, and its response carries `Connection: close`;
 * - a request that arrives on a kept-alive connection is not started: it gets 503 `unavailable`
 *   (the host's error response, `refuse`) with `Retry-After` and `Connection: close`, never
 *   fastify's own 503 body;
 * - a kept-alive connection with no request on it is closed after a short grace (FIN, never a
 *   reset: node's `server.close()` would destroy it at once, resetting a request already on its way);
 * - at the drain deadline a request still running is answered 503 `unavailable` (it may or may not
 *   have been applied; a write retried with the same Idempotency-Key is applied at most once),
 *   and connections still open after that are cut.
 */
export interface GracefulStop {
  /** True from the moment the stop began: readiness answers 503 from then on. */
  readonly stopping: boolean;
  /**
   * Stops the host as above; resolves once every connection is closed. `drainMs`: how long
   * requests already received may run; `forceMs`: how long after that connections may stay open.
   */
  stop(deadlines: { drainMs: number; forceMs: number }): Promise<void>;
}

export interface GracefulStopOptions {
  /** Where the stop reports requests and connections it had to cut (the hosts give fastify no logger). */
  logger: Pick<Logger, 'warn'>;
  /** Answers a request with the host's error response (the API's error object, the checkout's page). */
  refuse(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply;
}

/** Seconds a client is asked to wait before retrying a refused request; another instance answers it. */
export const STOPPING_RETRY_AFTER_SECONDS = 1;

/**
 * How long a kept-alive connection with no request on it stays open once the stop began. A client
 * that just read a response sends its next request on the same connection within a moment: in
 * this window that request is answered (503, Connection: close) rather than met by a closing socket.
 */
const IDLE_CLOSE_GRACE_MS = 1000;

const kGracefulStop = Symbol('plainpay.gracefulStop');

/** Refused before it started: nothing was applied. */
export function refusedWhileStopping(): AppError {
  return new AppError(
    'unavailable',
    'This instance is shutting down and did not start this request; nothing was applied. Retry it: another instance will answer.',
    { headers: stoppingHeaders() },
  );
}

/** Cut off at the drain deadline: it may have been applied. */
export function cutOffByStop(): AppError {
  return new AppError(
    'unavailable',
    'This request did not finish before this instance shut down; it may or may not have been applied. Retry it: a write retried with the same Idempotency-Key is applied at most once.',
    { headers: stoppingHeaders() },
  );
}

function stoppingHeaders(): Record<string, string> {
  return { 'Retry-After': String(STOPPING_RETRY_AFTER_SECONDS), Connection: 'close' };
}

/**
 * Installs the graceful stop on a host. Call it right after creating the instance, before any
 * other onRequest hook: a request refused while stopping must not reach authentication or the
 * database. Pair with `return503OnClosing: false` in the instance's options.
 */
export function installGracefulStop(app: FastifyInstance, options: GracefulStopOptions): GracefulStop {
  let stopping = false;
  /** Open connections. */
  const connections = new Set<Socket>();
  /**
   * Requests under way (for the drain deadline and to tell a busy connection from an idle one),
   * each with its fastify reply. This is on every request's path, so it is one slot and one
   * shared close listener; which connections are busy is worked out only while stopping.
   */
  const running = new RunningRequests();
  const busy = (socket: Socket): boolean => {
    for (const res of running.responses()) if (res.req.socket === socket) return true;
    return false;
  };

  let idleGraceMs = IDLE_CLOSE_GRACE_MS;
  /** Closes a connection that has had no request for the grace, with a FIN rather than a reset. */
  const closeWhenIdle = (socket: Socket): void => {
    if (socket.destroyed || socket.writableEnded) return;
    setTimeout(() => {
      // end(), not destroy(): a reset would also lose the answers still being written. A request
      // that crosses the FIN is not started (the onRequest hook refuses it) and cannot be answered
      // either (our side is closed): the grace narrows that race, it cannot remove it.
      if (!busy(socket) && !socket.destroyed && !socket.writableEnded) socket.end();
    }, idleGraceMs).unref();
  };

  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });

  /** A response's 'close' (shared by all: `this` is the response). */
  function ended(this: ServerResponse): void {
    running.remove(this);
    // Node ends a socket itself after a `Connection: close` response; this is for the others.
    if (stopping && !busy(this.req.socket)) closeWhenIdle(this.req.socket);
  }

  // A callback hook, not an async one: no promise on every request. The first onRequest hook of
  // the host, so a refused request reaches nothing else.
  app.addHook('onRequest', (request, reply, done) => {
    running.add(reply.raw, reply);
    reply.raw.on('close', ended);
    if (stopping) {
      options.refuse(request, reply, refusedWhileStopping());
      return;
    }
    done();
  });
  // A plain app.close() (tests, a failed start) refuses new requests the same way.
  app.addHook('preClose', async () => {
    beginStopping();
  });

  const beginStopping = (): void => {
    if (stopping) return;
    stopping = true;
    for (const res of running.responses()) {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    // From now on every response closes its connection, those fastify gives before any hook runs
    // (a malformed URL) included; before the stop, requests pay nothing for this.
    app.server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      res.setHeader('Connection', 'close');
    });
  };

  const cutOff = (): void => {
    let answered = 0;
    for (const [res, reply] of running.entries()) {
      if (!reply.sent && !res.headersSent) {
        options.refuse(reply.request, reply, cutOffByStop());
        answered += 1;
      } else if (!res.writableEnded) {
        // A stream under way (an MCP event stream): ended where it is.
        res.end();
      }
    }
    if (answered > 0) {
      options.logger.warn(
        { requests: answered },
        'requests still running at the drain deadline were answered 503 unavailable',
      );
    }
  };

  const state: GracefulStop = {
    get stopping() {
      return stopping;
    },
    async stop({ drainMs, forceMs }) {
      idleGraceMs = Math.min(IDLE_CLOSE_GRACE_MS, drainMs);
      beginStopping();
      // Node's close() destroys idle kept-alive connections at once; they are closed here instead.
      app.server.closeIdleConnections = () => {};
      const closed = app.close();
      for (const socket of connections) if (!busy(socket)) closeWhenIdle(socket);
      const timers = [
        setTimeout(cutOff, drainMs),
        setTimeout(() => {
          if (connections.size > 0) {
            options.logger.warn({ connections: connections.size }, 'connections still open after the drain were cut');
          }
          for (const socket of connections) socket.destroy();
        }, drainMs + forceMs),
      ];
      try {
        await closed;
      } finally {
        for (const timer of timers) clearTimeout(timer);
      }
    },
  };
  app.decorate(kGracefulStop, state);
  return state;
}

/** The graceful stop installed on this host (or on the host of this plugin's instance), if any. */
export function gracefulStopOf(instance: FastifyInstance): GracefulStop | undefined {
  return (instance as unknown as Record<symbol, GracefulStop | undefined>)[kGracefulStop];
}

/**
 * True once this host began stopping. For the readiness route: `isStopping(request.server)`.
 * (Every request that arrives while stopping is already refused with 503 before any route runs.)
 */
export function isStopping(instance: FastifyInstance): boolean {
  return gracefulStopOf(instance)?.stopping ?? false;
}
