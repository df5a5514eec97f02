import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { parseInput } from '../core/validation.ts';
import { findRun, listRunLines, listRuns } from '../db/repositories/reconciliation-runs.ts';
import type { ReconciliationRunRow } from '../db/tables/reconciliation.ts';
import { operatorBearerCheck } from '../http/operator-token.ts';
import type { ReconciliationServices } from './services.ts';
import { previousDay } from './day.ts';
import { linesCsv, runView } from './present.ts';
import { runReconciliation } from './runs.ts';

/**
 * The operator's reconciliation API (docs/reconciliation.md, "Who sees what"). The reconciliation
 * is instance-wide money, the operator's: these routes take OPERATOR_TOKEN as a bearer, never an
 * API key, and exist only when it is set (404 otherwise). A merchant's finance sees the lines about
 * its own payments on the dashboard instead.
 */
export const OPERATOR_RECONCILIATION_PATH = '/operator/reconciliation/runs';

const runRequest = z.strictObject({
  date: z.string().optional().describe('The UTC day to reconcile, YYYY-MM-DD (default: yesterday).'),
});
const listQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(365).default(30).describe('Runs to list, the latest day first (1 to 365).'),
});

export function reconciliationRoutes(services: ReconciliationServices): FastifyPluginAsync {
  return async (app) => {
    const token = services.config.operatorToken;
    if (token === undefined) return;
    const checkOperator = operatorBearerCheck(token, {
      missing: 'The reconciliation is the operator\'s: send "Authorization: Bearer <OPERATOR_TOKEN>".',
      invalid: 'The operator token is not valid.',
      realm: 'plainpay-operator',
    });
    // Every route of this plugin (its hooks apply to its own routes only).
    app.addHook('onRequest', async (request) => checkOperator(request.headers.authorization));
    const found = async (id: string): Promise<ReconciliationRunRow> => {
      const run = await findRun(services.db, id);
      if (!run) throw new AppError('not_found', `No reconciliation run '${id}'.`, { param: 'run_id' });
      return run;
    };

    app.get(OPERATOR_RECONCILIATION_PATH, async (request) => {
      const { limit } = parseInput(listQuery, request.query);
      const runs = await listRuns(services.db, limit);
      return { object: 'list', data: runs.map((run) => runView(run)) };
    });

    // Runs the reconciliation of one day now, and answers with the stored run.
    app.post(OPERATOR_RECONCILIATION_PATH, async (request) => {
      const { date } = parseInput(runRequest, request.body);
      const run = await runReconciliation(services, {
        day: date ?? previousDay(services.clock.now()),
        trigger: 'api',
      });
      return runView(run, await listRunLines(services.db, run.id));
    });

    app.get<{ Params: { run_id: string } }>(`${OPERATOR_RECONCILIATION_PATH}/:run_id`, async (request) => {
      const run = await found(request.params.run_id);
      return runView(run, await listRunLines(services.db, run.id));
    });

    app.get<{ Params: { run_id: string } }>(
      `${OPERATOR_RECONCILIATION_PATH}/:run_id/lines.csv`,
      async (request, reply) => {
        const run = await found(request.params.run_id);
        return reply
          .header('Content-Type', 'text/csv; charset=utf-8')
          .header('Content-Disposition', `attachment; filename="reconciliation-${run.day}-${run.id}.csv"`)
          .send(linesCsv(run, await listRunLines(services.db, run.id)));
      },
    );
  };
}
