import type { FastifyPluginAsync } from 'fastify';
import { operatorBearerCheck } from '../http/operator-token.ts';
import type { Config } from '../config/config.ts';
import { createServiceMetrics, type MetricSources } from './metrics.ts';

export const METRICS_PATH = '/metrics';

/** What /metrics uses: the token it asks for (config.metricsToken) and what its gauges read. */
export interface MetricsServices extends MetricSources {
  config: Config;
}

/**
 * GET /metrics for operators, and the request metrics of every route of the app. Without
 * METRICS_TOKEN it adds nothing: /metrics is an unknown URL (404) and requests cost nothing extra.
 * With it, a scrape must present the token as a bearer; it has no API key, so no per-key rate limit.
 */
export function metricsPlugin(services: MetricsServices): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    const token = services.config.metricsToken;
    if (token === undefined) return;
    const checkOperatorToken = operatorBearerCheck(token, {
      missing: 'GET /metrics needs the operator token: send "Authorization: Bearer <METRICS_TOKEN>".',
      invalid: 'The metrics token is not valid.',
      realm: 'plainpay-metrics',
    });
    const metrics = createServiceMetrics(services);

    // Callback style, no async: one histogram observe is all a request pays for.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url;
      if (route !== METRICS_PATH) {
        metrics.observeRequest(request.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      }
      done();
    });

    app.get(METRICS_PATH, async (request, reply) => {
      checkOperatorToken(request.headers.authorization);
      const body = await metrics.registry.metrics();
      return reply.header('Cache-Control', 'no-store').type(metrics.registry.contentType).send(body);
    });
  };
  // What fastify-plugin does: the plugin's hook then applies to every route of the app, not only to
  // the routes inside this plugin.
  return Object.assign(plugin, { [Symbol.for('skip-override')]: true });
}
