import { createHash } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json.ts';
import type { Db } from '../db/database.ts';

/**
 * The action log: every money action and agent step, append-only, each row chained to the
 * previous row of the same account by hash. Tampering with any row (or deleting one) changes a
 * hash that a later row recorded, and `plainpay audit verify` finds it. The database also
 * refuses UPDATE and DELETE on the table (migration 005), so tampering needs superuser rights.
 *
 * It lives apart from src/agent because every channel writes it: REST and MCP money calls too.
 */
export const GENESIS_HASH = '0'.repeat(64);

export interface ActionLogEntry {
  accountId: string;
  livemode: boolean;
  /** e.g. action.executed, action.held, action.denied, action.failed, confirmation.approved, run.finished */
  entryType: string;
  runId?: string | null;
  actionId?: string | null;
  payload: unknown;
  at: Date;
}

/**
 * Takes the account's action-log lock (its head row, created on first use): money actions and log
 * appends of one account then run one at a time. Every append's transaction takes it first.
 */
export async function lockAccountActions(db: Db, accountId: string): Promise<void> {
  await db
    .insertInto('action_log_heads')
    .values({ account_id: accountId, last_seq: 0n, last_hash: GENESIS_HASH })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .execute();
  await db
    .selectFrom('action_log_heads')
    .select('account_id')
    .where('account_id', '=', accountId)
    .forUpdate()
    .execute();
}

/** Appends one entry in the caller's transaction, which must hold lockAccountActions for the account. */
export async function appendActionLog(db: Db, entry: ActionLogEntry): Promise<{ seq: bigint; hash: string }> {
  // FOR UPDATE again costs nothing under the caller's lock, and still serialises a caller that forgot it.
  const head = await db
    .selectFrom('action_log_heads')
    .select(['last_hash'])
    .where('account_id', '=', entry.accountId)
    .forUpdate()
    .executeTakeFirst();
  if (!head) throw new Error(`action log of ${entry.accountId} appended to without lockAccountActions`);
  const payloadText = canonicalJson(entry.payload ?? null);
  const row = {
    account_id: entry.accountId,
    livemode: entry.livemode,
    entry_type: entry.entryType,
    run_id: entry.runId ?? null,
    action_id: entry.actionId ?? null,
    created_at: entry.at,
  };
  const hash = entryHash(head.last_hash, row, payloadText);
  const inserted = await db
    .insertInto('action_log')
    .values({ ...row, payload: payloadText, prev_hash: head.last_hash, hash })
    .returning('seq')
    .executeTakeFirstOrThrow();
  await db
    .updateTable('action_log_heads')
    .set({ last_seq: inserted.seq, last_hash: hash })
    .where('account_id', '=', entry.accountId)
    .execute();
  return { seq: inserted.seq, hash };
}

function entryHash(
  prevHash: string,
  row: {
    account_id: string;
    livemode: boolean;
    entry_type: string;
    run_id: string | null;
    action_id: string | null;
    created_at: Date;
  },
  payloadText: string,
): string {
  // An explicit field list: what is hashed must not depend on which columns a query selected.
  const material = canonicalJson({
    account_id: row.account_id,
    livemode: row.livemode,
    entry_type: row.entry_type,
    run_id: row.run_id,
    action_id: row.action_id,
    created_at: row.created_at.toISOString(),
    prev_hash: prevHash,
  });
  return createHash('sha256').update(material).update('\n').update(payloadText).digest('hex');
}

export interface AuditReport {
  ok: boolean;
  rowsChecked: number;
  accountsChecked: number;
  /** The first row whose stored hash or link does not match, in log order. */
  firstBroken?: { seq: string; accountId: string; reason: string };
}

/** Recomputes every account's chain from genesis and compares with the stored heads. */
export async function verifyActionLog(db: Db): Promise<AuditReport> {
  const last = new Map<string, string>();
  let firstBroken: AuditReport['firstBroken'];
  let rowsChecked = 0;
  let after = -1n;
  for (;;) {
    const page = await db
      .selectFrom('action_log')
      .selectAll()
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(1000)
      .execute();
    if (page.length === 0 || firstBroken) break;
    after = page[page.length - 1]!.seq;
    for (const row of page) {
      rowsChecked++;
      const prev = last.get(row.account_id) ?? GENESIS_HASH;
      const broken = (reason: string): void => {
        firstBroken ??= { seq: String(row.seq), accountId: row.account_id, reason };
      };
      const expected = entryHash(row.prev_hash, row, canonicalJson(row.payload ?? null));
      if (expected !== row.hash) broken('its contents do not match its hash (the row was edited)');
      else if (row.prev_hash !== prev)
        broken('its link to the previous row of the account is broken (a row before it was changed or removed)');
      last.set(row.account_id, row.hash);
      if (firstBroken) break;
    }
  }
  if (!firstBroken) {
    const heads = await db.selectFrom('action_log_heads').selectAll().execute();
    for (const head of heads) {
      const tail = last.get(head.account_id) ?? GENESIS_HASH;
      if (tail !== head.last_hash) {
        firstBroken = {
          seq: String(head.last_seq),
          accountId: head.account_id,
          reason: 'the newest rows of the account are missing',
        };
        break;
      }
    }
  }
  return {
    ok: firstBroken === undefined,
    rowsChecked,
    accountsChecked: last.size,
    ...(firstBroken ? { firstBroken } : {}),
  };
}
