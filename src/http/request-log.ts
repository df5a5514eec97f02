import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilent, LogFn } from 'pino';
import type { Logger } from '../core/logger.ts';

/**
 * One line per answered request at `info` (method, route pattern, status, milliseconds), for the API
 * and the checkout host alike. The route pattern, never the URL: a checkout URL carries the payment
 * id, which is the session's capability. A callback hook that builds the line only when it is
 * written: above `info` (the benches run at `warn`) a request pays nothing here.
 */
export function logEachRequest(app: FastifyInstance, logger: Logger, message: string): void {
  if (!logger.isLevelEnabled('info')) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        url: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      message,
    );
    done();
  });
}

/**
 * fastify's `childLoggerFactory` for both hosts: each request's logger writes through `logger` (the
 * runtime's pino logger), its lines carrying the request id, and is made when the request first
 * writes a line at an enabled level, not for every request. Building a pino child per request
 * (bindings, redaction) was 4% of GET /v1/ping's CPU, and at `warn` most requests write nothing.
 *
 * The hosts give fastify no logger of its own (`logger: false`, so `app.log` writes nothing): with
 * one, fastify adds two listeners and a clock read to every response for its request log, which
 * is off here, and that was 0.5 µs of GET /v1/ping's 15 (a route with an onResponse hook, the
 * per-request line at `info` or the request metrics, still pays it). Requests still get their
 * logger from this factory, and fastify's own lines about a request (a reply sent twice, say) go
 * through it too.
 */
export function requestLoggerFactory(
  logger: Logger,
): (parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) => FastifyBaseLogger {
  return (_parent, bindings, options) => new LazyRequestLogger(logger, bindings, options);
}

class LazyRequestLogger implements FastifyBaseLogger {
  #made: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly childBindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get #logger(): Logger {
    this.#made ??= this.parent.child(this.childBindings, this.options);
    return this.#made;
  }

  /** Whether a line at `level` would be written, without making the child when it would not. */
  #writes(level: LevelWithSilent): boolean {
    // A route's own level (fastify's logLevel) lives on the child: decided there.
    if (this.#made || this.options.level !== undefined) return this.#logger.isLevelEnabled(level);
    return this.parent.isLevelEnabled(level);
  }

  get level(): string {
    return this.#made?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.#logger.level = level;
  }
  isLevelEnabled(level: LevelWithSilent): boolean {
    return this.#writes(level);
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
  fatal(...args: Parameters<LogFn>): void {
    if (this.#writes('fatal')) this.#logger.fatal(...args);
  }
  error(...args: Parameters<LogFn>): void {
    if (this.#writes('error')) this.#logger.error(...args);
  }
  warn(...args: Parameters<LogFn>): void {
    if (this.#writes('warn')) this.#logger.warn(...args);
  }
  info(...args: Parameters<LogFn>): void {
    if (this.#writes('info')) this.#logger.info(...args);
  }
  debug(...args: Parameters<LogFn>): void {
    if (this.#writes('debug')) this.#logger.debug(...args);
  }
  trace(...args: Parameters<LogFn>): void {
    if (this.#writes('trace')) this.#logger.trace(...args);
  }
  silent(): void {}
}

/**
 * A request id: `req_` and 24 random hex characters, cut from a pooled text of 512 ids. One
 * randomBytes call per request (a getrandom system call each) was 8% of GET /v1/ping's CPU under
 * load (bench/http.ts), turning bytes to hex per request another 1%, and joining `req_` to the hex
 * per request made a two-part string that Node then had to flatten to check the header's value.
 * Same format and same randomness as before, fetched, turned to hex and prefixed 512 ids at a time.
 */
const REQUEST_ID_LENGTH = 'req_'.length + 24;
const IDS_PER_POOL = 512;
let idPool = '';
let idOffset = 0;
export function randomRequestId(): string {
  if (idOffset + REQUEST_ID_LENGTH > idPool.length) {
    const hex = randomBytes(12 * IDS_PER_POOL).toString('hex');
    let pool = '';
    for (let i = 0; i < IDS_PER_POOL; i++) pool += `req_${hex.slice(i * 24, i * 24 + 24)}`;
    idPool = pool;
    idOffset = 0;
  }
  idOffset += REQUEST_ID_LENGTH;
  return idPool.slice(idOffset - REQUEST_ID_LENGTH, idOffset);
}
