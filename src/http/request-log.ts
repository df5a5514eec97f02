import type { FastifyInstance } from 'fastify';
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
