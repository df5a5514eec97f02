import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import { z } from 'zod';
import { AppError, isConnectionFailure, UNREACHABLE_RETRY_AFTER_SECONDS } from '../../core/errors.ts';
import type { ApiServices } from './services.ts';
import { chainReadiness } from '../../settlement/chain-health.ts';
import type { ApiOperation } from '../openapi.ts';
import { sendError } from '../plugins/errors.ts';

export const healthOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/healthz',
    operationId: 'liveness',
    summary: 'Liveness probe',
    description: 'The process answers.',
    tag: 'health',
    scope: null,
    response: z.object({ ok: z.literal(true) }),
    database: false,
  },
  {
    method: 'GET',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness probe',
    description:
      'The database answers and settlement signs for the chain its node serves; 503 (`unavailable`, with Retry-After) when not, or while this instance shuts down, so load balancers stop sending traffic.',
    tag: 'health',
    scope: null,
    response: z.object({ ok: z.literal(true), database: z.enum(['postgres', 'pglite']) }),
    errors: ['unavailable'],
  },
];

export function healthRoutes(services: Pick<ApiServices, 'db' | 'dbKind' | 'logger'>): FastifyPluginAsync {
  return async (app) => {
    /** Liveness: the process answers. */
    app.get('/healthz', async () => ({ ok: true }));
    /** Readiness: the database answers; load balancers stop sending traffic when it does not. */
    app.get('/readyz', async (_request, reply) => {
      try {
        await sql`select 1`.execute(services.db);
        // Settlement refuses to sign while the chain node serves another chain than the one it
        // signs for (settlement/chain-health.ts): the deployment needs an operator, so say so.
        const chain = await chainReadiness(services);
        if (!chain.ready) {
          return sendError(
            reply,
            new AppError('unavailable', `Not ready: ${chain.reason}.`, {
              headers: { 'Retry-After': String(UNREACHABLE_RETRY_AFTER_SECONDS) },
            }),
          );
        }
        return { ok: true, database: services.dbKind };
      } catch (error) {
        // A lost connection is logged once per outage where it is seen (db/connect.ts); probes
        // every few seconds would repeat it. Anything else is unexpected here.
        if (isConnectionFailure(error)) services.logger.debug({ err: error }, 'readiness check failed');
        else services.logger.warn({ err: error }, 'readiness check failed');
        return sendError(
          reply,
          new AppError('unavailable', 'Not ready: the database is not reachable.', {
            cause: error,
            headers: { 'Retry-After': String(UNREACHABLE_RETRY_AFTER_SECONDS) },
          }),
        );
      }
    });
  };
}
