import { verifyActionLog } from '../audit/action-log.ts';
import type { Config } from '../config/config.ts';
import { connectDatabase } from '../db/connect.ts';

/** `plainpay audit verify`: recomputes every account's action-log chain; exit 1 naming the first broken row. */
export async function auditCommand(config: Config, args: string[]): Promise<number> {
  if (args[0] !== 'verify') {
    console.error('Usage: plainpay audit verify [--json]');
    return 2;
  }
  const json = args.includes('--json');
  const handle = await connectDatabase(config.database, { poolSize: 1 });
  try {
    const report = await verifyActionLog(handle.db);
    if (json) {
      console.log(JSON.stringify(report));
    } else if (report.ok) {
      console.log(
        `Action log intact: ${report.rowsChecked} rows in ${report.accountsChecked} account chains verified.`,
      );
    } else {
      const broken = report.firstBroken!;
      console.error(`Action log BROKEN at row seq=${broken.seq} (account ${broken.accountId}): ${broken.reason}.`);
    }
    return report.ok ? 0 : 1;
  } finally {
    await handle.close();
  }
}
