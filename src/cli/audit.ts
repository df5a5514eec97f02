import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { type AuditReport, describeBroken, verifyActionLog, type VerifyScope } from '../audit/action-log.ts';
import { presentVerification, recordHeadsSeen, type VerificationView } from '../audit/verification.ts';
import { type DatabaseCommand, type DatabaseWork, parseStrict } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

/**
 * `plainpay audit verify`: recomputes every account's action-log chain, compares the tables
 * behind the action views and every money row with what was recorded, and checks that no chain is
 * shorter than a verification or a checkpoint saw it; exit 1 naming the first broken row. Each
 * intact chain's head is recorded for the next verification.
 */
export const auditVerify: DatabaseCommand = {
  kind: 'database',
  // It reads the money-row digests and records the heads it saw (migration 028).
  needsLatestSchema: true,
  help: `Options:
  --checkpoint C   A checkpoint from \`plainpay audit checkpoint\` (a file, or its JSON): every
                   account's chain must still hold the head it names.
  --json           Print the report on stdout as GET /v1/audit/verify answers it, over every
                   account: {"object":"audit_verification","ok","verified_at","through_seq",
                   "entries_checked","actions_checked","runs_checked","money_rows_checked",
                   "broken"}, with "accounts_checked" and each account's chain head ("heads").

Checks every account's hash chain, then that the actions, their confirmations, runs and key
labels shown to finance still match what the log recorded, that each transaction hash shown is
the one of the settlement batch that paid it, and that every payment, payout, refund, revenue
share, ledger entry and settlement batch is as plainpay last wrote it. A chain shorter than the
last verification (or the checkpoint) saw it is broken too. Exit 0 when all is intact, 1 naming
the first edited, added or missing row.`,
  parse(args) {
    const { values } = parseStrict(() =>
      parseArgs({ args, options: { json: { type: 'boolean', default: false }, checkpoint: { type: 'string' } } }),
    );
    const checkpoint = values.checkpoint === undefined ? undefined : readCheckpoint(values.checkpoint);
    const work: DatabaseWork = async ({ db, clock }, out) => {
      const report = await verifyActionLog(db, checkpoint ? { checkpoint: checkpoint.heads } : {});
      await recordHeadsSeen(db, report, clock.now());
      if (values.json) {
        out.stdout(JSON.stringify(cliVerification(report, clock.now())));
      } else if (report.ok) {
        out.stdout(
          `Action log intact: ${report.rowsChecked} rows in ${report.accountsChecked} account chains verified; ${report.actionsChecked} actions, ${report.runsChecked} runs and ${report.moneyRowsChecked} money rows match them.`,
        );
      } else {
        out.stderr(`Action log BROKEN at ${describeBroken(report.firstBroken!)}.`);
      }
      return report.ok ? EXIT.ok : EXIT.failure;
    };
    // Run inside serve, the checkpoint goes as its JSON: serve's working directory is not ours.
    if (checkpoint) {
      work.argv = ['audit', 'verify', '--checkpoint', JSON.stringify(checkpoint), ...(values.json ? ['--json'] : [])];
    }
    return work;
  },
};

/**
 * `plainpay audit checkpoint`: verifies, then prints each account's head (seq and hash) for the
 * operator to keep outside the database. `audit verify --checkpoint` then names a chain cut back or
 * rewritten after it, even by someone who also removed the verifications recorded in the database.
 */
export const auditCheckpoint: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Prints {"object":"audit_checkpoint","taken_at","heads":{account:{"seq","hash"}}} on stdout,
after a verification that found everything intact (exit 1 naming the broken row otherwise).
Keep it where the database's writers cannot reach it; pass it to \`audit verify --checkpoint\`.`,
  parse(args) {
    parseStrict(() => parseArgs({ args, options: {} }));
    return async ({ db, clock }, out) => {
      const report = await verifyActionLog(db);
      if (!report.ok) {
        out.stderr(`No checkpoint: the action log is BROKEN at ${describeBroken(report.firstBroken!)}.`);
        return EXIT.failure;
      }
      const now = clock.now();
      await recordHeadsSeen(db, report, now);
      const checkpoint: Checkpoint = { object: 'audit_checkpoint', taken_at: now.toISOString(), heads: report.heads };
      out.stdout(JSON.stringify(checkpoint));
      return EXIT.ok;
    };
  },
};

const checkpointSchema = z.object({
  object: z.literal('audit_checkpoint'),
  taken_at: z.string(),
  heads: z.record(z.string(), z.object({ seq: z.string().regex(/^\d+$/), hash: z.string().regex(/^[0-9a-f]{64}$/) })),
});

type Checkpoint = z.output<typeof checkpointSchema> & { heads: NonNullable<VerifyScope['checkpoint']> };

/** A checkpoint given as its JSON, or as the file holding it. */
function readCheckpoint(value: string): Checkpoint {
  let text = value;
  if (!value.trimStart().startsWith('{')) {
    try {
      text = readFileSync(value, 'utf8');
    } catch (error) {
      throw new UsageError(`--checkpoint ${value} cannot be read: ${(error as Error).message}`, {
        param: 'checkpoint',
      });
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError('--checkpoint is not JSON: give the output of `plainpay audit checkpoint`.', {
      param: 'checkpoint',
    });
  }
  const checked = checkpointSchema.safeParse(parsed);
  if (!checked.success) {
    throw new UsageError('--checkpoint is not a checkpoint: give the output of `plainpay audit checkpoint`.', {
      param: 'checkpoint',
    });
  }
  return checked.data;
}

/**
 * The report as `--json` prints it: the API's audit_verification (GET /v1/audit/verify, the same
 * fields in the same words) over every account, plus what only an instance-wide run has: how many
 * account chains it checked and the head of each.
 */
export function cliVerification(
  report: AuditReport,
  now: Date,
): VerificationView & { accounts_checked: number; heads: AuditReport['heads'] } {
  return {
    ...presentVerification({ verifiedAt: now, report }, null),
    accounts_checked: report.accountsChecked,
    heads: report.heads,
  };
}
