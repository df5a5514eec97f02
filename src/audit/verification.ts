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
  const row = {
    verified_at: now,
    through_seq: BigInt(report.throughSeq ?? 0),
    ok: report.ok,
    report: JSON.stringify(report),
  };
  await db
    .insertInto('audit_verifications')
    .values({ account_id: accountId, ...row })
    .onConflict((oc) => oc.column('account_id').doUpdateSet(row))
    .execute();
  await recordHeadsSeen(db, report, now);
  return { verifiedAt: now, report };
}

/**
 * Keeps the heads an intact verification reached, which every later verification must still find
 * (a log cut back or rewritten is named then: audit/action-log.ts). A broken one records nothing,
 * leaving the heads seen before in place. Heads only move forward.
 */
export async function recordHeadsSeen(db: Db, report: AuditReport, now: Date): Promise<void> {
  if (!report.ok) return;
  for (const [accountId, head] of Object.entries(report.heads)) {
    const seen = { seq: BigInt(head.seq), hash: head.hash, seen_at: now };
    await db
      .insertInto('audit_heads_seen')
      .values({ account_id: accountId, ...seen })
      .onConflict((oc) => oc.column('account_id').doUpdateSet(seen).where('audit_heads_seen.seq', '<=', seen.seq))
      .execute();
  }
}

/**
 * The account's verification as of now: the stored one when it already reaches the log's newest
 * entry, else a new one (the Actions screen's banner is never older than the log it describes).
 * Verifying reads the account's whole log, so it runs only when something was logged since.
 */
export async function freshVerification(db: Db, accountId: string, now: Date): Promise<StoredVerification> {
  const stored = await lastVerification(db, accountId);
  const head = await db
    .selectFrom('action_log')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  const newest = head?.seq === null || head?.seq === undefined ? 0n : BigInt(head.seq);
  const through =
    stored?.report.throughSeq === undefined || stored.report.throughSeq === null
      ? -1n
      : BigInt(stored.report.throughSeq);
  if (stored?.report.ok && through >= newest) return stored;
  return verifyAccount(db, accountId, now);
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
 * table only, as other-mode ids are nowhere shown. The operator's CLI passes null and sees both.
 */
export function presentVerification(stored: StoredVerification, livemode: boolean | null): VerificationView {
  const { report } = stored;
  const broken = report.firstBroken;
  // null: the operator (`plainpay audit verify`), who sees both modes.
  const hidden =
    livemode !== null && broken?.livemode !== undefined && broken.livemode !== null && broken.livemode !== livemode;
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
