import compress from '@fastify/compress';
import Fastify, { type FastifyInstance } from 'fastify';
import { installGracefulStop } from '../http/graceful-stop.ts';
import { noSchemaCompilers } from '../http/schema-compilers.ts';
import { handleFrameworkError, registerErrorHandling, sendError } from '../http/plugins/errors.ts';
import { type MetricsServices, metricsPlugin } from './plugin.ts';

/**
 * GET /metrics for a `serve --role worker` process, on PORT (a worker serves nothing else there).
 * Its settlement worker is what fills the paid → settled histogram: without this listener a
 * deployment that runs workers apart from the API would never expose it.
 */
export async function buildWorkerMetricsApp(services: MetricsServices): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    frameworkErrors: handleFrameworkError,
    return503OnClosing: false,
    schemaController: noSchemaCompilers,
  });
  installGracefulStop(app, { logger: services.logger, refuse: (_request, reply, error) => sendError(reply, error) });
  registerErrorHandling(app);
  // As on the API host (http/app.ts): a scrape that asks for gzip gets it.
  await app.register(compress, { global: true, globalDecompression: false, threshold: 1024 });
  await app.register(metricsPlugin(services));
  return app;
}
