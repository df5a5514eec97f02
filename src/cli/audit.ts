import { parseArgs } from 'node:util';
import { describeBroken, verifyActionLog } from '../audit/action-log.ts';
import { type DatabaseCommand, parseStrict } from './command.ts';
import { EXIT } from './failures.ts';

/**
 * `plainpay audit verify`: recomputes every account's action-log chain and compares the tables
 * behind the action views with it; exit 1 naming the first broken row.
 */
export const auditVerify: DatabaseCommand = {
  kind: 'database',
  // A check of what is there: it does not change the schema it checks.
  needsLatestSchema: false,
  help: `Options:
  --json           Print the report {"ok","rowsChecked","accountsChecked","actionsChecked",
                   "runsChecked","throughSeq","firstBroken"?} on stdout.

Checks every account's hash chain, then that the actions, their confirmations, runs and key
labels shown to finance still match what the log recorded, and that each transaction hash
shown is the one of the settlement batch that paid it.
Exit 0 when all is intact, 1 naming the first edited, added or missing row.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { json: { type: 'boolean', default: false } } }));
    return async ({ db }, out) => {
      const report = await verifyActionLog(db);
      if (values.json) {
        out.stdout(JSON.stringify(report));
      } else if (report.ok) {
        out.stdout(
          `Action log intact: ${report.rowsChecked} rows in ${report.accountsChecked} account chains verified; ${report.actionsChecked} actions and ${report.runsChecked} runs match them.`,
        );
      } else {
        out.stderr(`Action log BROKEN at ${describeBroken(report.firstBroken!)}.`);
      }
      return report.ok ? EXIT.ok : EXIT.failure;
    };
  },
};
