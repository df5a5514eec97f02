import { parseArgs } from 'node:util';
import { listRunLines } from '../db/repositories/reconciliation-runs.ts';
import { dayWindow, previousDay } from '../reconciliation/day.ts';
import { linesCsv, runText, runView } from '../reconciliation/present.ts';
import { runReconciliation } from '../reconciliation/runs.ts';
import { type DatabaseCommand, parseStrict } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

/**
 * `plainpay reconcile [--date YYYY-MM-DD] [--json|--csv]`: the daily three-way reconciliation of one
 * UTC day, run now by the operator (docs/reconciliation.md). It is stored like the scheduled run
 * (the history; /metrics reports the latest) and printed.
 */
export const reconcile: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:
  --date YYYY-MM-DD  The UTC day to reconcile (default: yesterday).
  --json             Print the run as JSON: {"object":"reconciliation_run", "summary", "lines", …}.
  --csv              Print its lines as CSV, one row per difference (with a header).

Reads what the providers list as collected into your collection accounts, what the ledger booked,
what was settled on chain that day and the treasury against what it owes; every difference is a
line. It moves no money. Run it beside a running serve too: on the embedded database it runs inside
it. Exit 0 when there is no difference, 1 when there are some (or the run failed). What each line
means and what to do about it: docs/reconciliation.md.`,
  parse(args) {
    const { values } = parseStrict(() =>
      parseArgs({
        args,
        options: {
          date: { type: 'string' },
          json: { type: 'boolean', default: false },
          csv: { type: 'boolean', default: false },
        },
      }),
    );
    if (values.json && values.csv) throw new UsageError('Choose one of --json and --csv.', { param: 'csv' });
    if (values.date !== undefined) dayWindow(values.date);
    return async (context, out) => {
      if (!context.runtime) throw new Error('plainpay reconcile needs the service runtime, which this context lacks');
      const runtime = await context.runtime();
      const run = await runReconciliation(runtime, {
        day: values.date ?? previousDay(context.clock.now()),
        trigger: 'cli',
      });
      const lines = await listRunLines(context.db, run.id);
      if (values.json) out.stdout(JSON.stringify(runView(run, lines)));
      else if (values.csv) out.stdout(linesCsv(run, lines).replace(/\r\n$/, ''));
      else out.stdout(runText(run, lines));
      return run.differences === 0 ? EXIT.ok : EXIT.failure;
    };
  },
};
