import { z } from 'zod';
import type { Db } from '../db/database.ts';
import { type AuditReport, describeBroken, verifyActionLog } from './action-log.ts';

export const verificationOutput = z
  .object({
    object: z.literal('audit_verification'),
    ok: z
      .boolean()
      .describe(
        "True when the account's action log, the tables behind the action views and the account's money rows are intact.",
      ),
    verified_at: z.string().describe('When this verification ran.'),
    through_seq: z
      .string()
      .nullable()
      .describe('The newest action-log entry of the account the chain check reached (null: the log is empty).'),
    entries_checked: z.number().describe('Action-log entries whose hash and link were recomputed.'),
    actions_checked: z
      .number()
      .describe('Actions compared with the newest log entry about each, with their settlement hashes.'),
    runs_checked: z.number().describe('Finished agent runs compared with their run.finished entry.'),
    money_rows_checked: z
      .number()
      .describe(
        "The account's payments, payouts, refunds, revenue shares and ledger entries compared with the digests recorded when plainpay wrote them.",
      ),
    broken: z
      .object({
        seq: z
          .string()
          .nullable()
          .describe('The log entry at fault, or the newest one that recorded the row (null: none records it).'),
        table: z
          .string()
          .describe(
            'action_log, action_log_heads, agent_actions, confirmations, agent_runs, api_keys, payments, payouts, refunds, revenue_shares, ledger_entries.',
          ),
        row_id: z.string().nullable().describe("The row's id; null for a row of the other mode."),
        columns: z.array(z.string()).describe('The columns that differ from what the log recorded, where known.'),
        message: z.string().describe('The row and what is wrong with it, in words.'),
      })
      .nullable()
      .describe('The first row found edited, added or missing; null when ok.'),
  })
  .describe("A verification of the account's action log and of what the action views show.");

export type VerificationView = z.output<typeof verificationOutput>;

export interface StoredVerification {
  verifiedAt: Date;
  report: AuditReport;
}

/**
 * Verifies one account's log, views and money rows, and keeps the result as the account's last
 * verification (the dashboard's "Log verified through #N at T" line). The chain is per account, both modes.
 */
export async function verifyAccount(db: Db, accountId: string, now: Date): Promise<StoredVerification> {
  const report = await verifyActionLog(db, { accountId });
  await recordVerification(db, report, [accountId], now);
  return { verifiedAt: now, report };
}

/**
 * Keeps a verification as each account's last: its report, and, when intact, the head it reached,
 * which every later verification must still find (a log cut back or rewritten is named then). A
 * broken one leaves the head seen before in place.
 */
export async function recordVerification(
  db: Db,
  report: AuditReport,
  accountIds: readonly string[],
  now: Date,
): Promise<void> {
  for (const accountId of accountIds) {
    const head = report.heads[accountId];
    const row = { verified_at: now, ok: report.ok, report: JSON.stringify(report) };
    const reached = report.ok && head ? { through_seq: BigInt(head.seq), through_hash: head.hash } : undefined;
    await db
      .insertInto('audit_verifications')
      .values({ account_id: accountId, through_seq: 0n, through_hash: null, ...row, ...reached })
      .onConflict((oc) => oc.column('account_id').doUpdateSet({ ...row, ...reached }))
      .execute();
  }
}

export async function lastVerification(db: Db, accountId: string): Promise<StoredVerification | undefined> {
  const row = await db
    .selectFrom('audit_verifications')
    .select(['verified_at', 'report'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && { verifiedAt: row.verified_at, report: row.report as AuditReport };
}

/**
 * The verification as a key of one mode sees it: a broken row of the other mode is named by its
 * table only, as other-mode ids are nowhere shown.
 */
export function presentVerification(stored: StoredVerification, livemode: boolean): VerificationView {
  const { report } = stored;
  const broken = report.firstBroken;
  const hidden = broken?.livemode !== undefined && broken.livemode !== null && broken.livemode !== livemode;
  return {
    object: 'audit_verification',
    ok: report.ok,
    verified_at: stored.verifiedAt.toISOString(),
    through_seq: report.throughSeq,
    entries_checked: report.rowsChecked,
    actions_checked: report.actionsChecked,
    runs_checked: report.runsChecked,
    money_rows_checked: report.moneyRowsChecked ?? 0,
    broken:
      broken === undefined
        ? null
        : hidden
          ? {
              seq: broken.seq,
              table: broken.table,
              row_id: null,
              columns: broken.columns,
              message: `a ${broken.livemode ? 'live' : 'test'}-mode row of ${broken.table} was changed outside plainpay; verify with a key of that mode to see which`,
            }
          : {
              seq: broken.seq,
              table: broken.table,
              row_id: broken.rowId,
              columns: broken.columns,
              message: describeBroken(broken),
            },
  };
}
