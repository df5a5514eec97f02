import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import { z } from 'zod';
import type { Runtime } from '../../runtime.ts';
import type { ApiOperation } from '../openapi.ts';

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
  },
  {
    method: 'GET',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness probe',
    description: 'The database answers; 503 when it does not, so load balancers stop sending traffic.',
    tag: 'health',
    scope: null,
    response: z.object({ ok: z.literal(true), database: z.enum(['postgres', 'pglite']) }),
    errors: ['unavailable'],
  },
];

export function healthRoutes(runtime: Runtime): FastifyPluginAsync {
  return async (app) => {
    /** Liveness: the process answers. */
    app.get('/healthz', async () => ({ ok: true }));
    /** Readiness: the database answers; load balancers stop sending traffic when it does not. */
    app.get('/readyz', async (_request, reply) => {
      try {
        await sql`select 1`.execute(runtime.db);
        return { ok: true, database: runtime.dbKind };
      } catch (error) {
        runtime.logger.warn({ err: error }, 'readiness check failed');
        return reply.code(503).send({ error: { type: 'api_error', message: 'The database is not reachable.' } });
      }
    });
  };
}
