import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import type { Runtime } from '../../runtime.ts';

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
