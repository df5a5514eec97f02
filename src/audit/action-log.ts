import { canonicalJson } from '../core/canonical-json.ts';
import type { Db } from '../db/database.ts';
import { type ChainPoint, entryHash, GENESIS, GENESIS_HASH, readHead, walkSegment } from './chain.ts';
import { checkMoneyRows } from './money-rows.ts';
import { type BrokenRow, type ChainWalk, checkViews, recordWalked } from './view-check.ts';

/**
 * The action log: every money action and agent step, append-only, each row chained to the
 * previous row of the same account by hash. Tampering with any row (or deleting one) changes a
 * hash that a later row recorded, and `plainpay audit verify` finds it. The database also
 * refuses UPDATE and DELETE on the table (migration 005), so tampering needs superuser rights.
 * Entries about an action record the action as finance's views show it, so the tables behind
 * those views are verified too (audit/action-snapshot.ts).
 *
 * It lives apart from src/agent because every channel writes it: REST and MCP money calls too.
 */
export { GENESIS_HASH } from './chain.ts';

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
  await lockActionLogs(db, [accountId]);
}

/**
 * lockAccountActions for several accounts at once (a system run that acts for many merchants),
 * taken in account-id order so that two such runs never wait on each other in a circle. With
 * skipBusy it waits for no lock a transaction holds on an existing head: it takes the free ones
 * (SKIP LOCKED) and returns which. Creating a missing head can still wait, for another transaction
 * creating the same one; a caller that must never wait makes the heads first (ensureActionLogHeads),
 * holding nothing, as the settlement intake and the expiry job do.
 */
export async function lockActionLogs(
  db: Db,
  accountIds: readonly string[],
  options: { skipBusy?: boolean } = {},
): Promise<Set<string>> {
  const ids = [...new Set(accountIds)].sort();
  if (ids.length === 0) return new Set();
  await ensureActionLogHeads(db, ids);
  // ORDER BY under FOR UPDATE: rows are locked as the sort returns them, in id order.
  const query = db
    .selectFrom('action_log_heads')
    .select('account_id')
    .where('account_id', 'in', ids)
    .orderBy('account_id')
    .forUpdate();
  const locked = await (options.skipBusy ? query.skipLocked() : query).execute();
  return new Set(locked.map((row) => row.account_id));
}

/** Creates the action-log heads these accounts do not have yet (an account's log starts empty). */
export async function ensureActionLogHeads(db: Db, accountIds: readonly string[]): Promise<void> {
  const ids = [...new Set(accountIds)].sort();
  if (ids.length === 0) return;
  await db
    .insertInto('action_log_heads')
    .values(ids.map((id) => ({ account_id: id, last_seq: 0n, last_hash: GENESIS_HASH })))
    .onConflict((oc) => oc.column('account_id').doNothing())
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

export interface AuditReport {
  ok: boolean;
  /** Action-log entries whose hash and link were recomputed. */
  rowsChecked: number;
  accountsChecked: number;
  /** agent_actions rows compared with the newest entry about each (and their settlement hashes). */
  actionsChecked: number;
  /** Finished agent_runs rows compared with their run.finished entry. */
  runsChecked: number;
  /** Money rows (payments, payouts, refunds, revenue shares, ledger entries, settlement batches) compared with their digests. */
  moneyRowsChecked: number;
  /** Each account's head the chain check reached: what a later verification must still find. */
  heads: Record<string, { seq: string; hash: string }>;
  /** The newest entry the chain check reached: "verified through #N". null: nothing to check. */
  throughSeq: string | null;
  /** The first row found edited, added or missing: in log order for the chain, then the views' tables. */
  firstBroken?: BrokenRow;
}

/** Which accounts to verify, and the heads an operator kept outside the database (a checkpoint). */
export interface VerifyScope {
  accountId?: string;
  /** By account: a head `plainpay audit checkpoint` printed, which the chain must still hold. */
  checkpoint?: Record<string, { seq: string; hash: string }>;
}

/**
 * Recomputes every account's chain (or one account's) from genesis and compares it with the
 * stored heads; then compares the tables behind the views finance reads with what the chain
 * recorded of them (audit/view-check.ts). Read-only, and safe beside running writers: each
 * account's head is read first and its chain walked only up to it (audit/chain.ts), and rows that
 * changed after that are compared with the later entries that recorded the change.
 */
export async function verifyActionLog(db: Db, scope: VerifyScope = {}): Promise<AuditReport> {
  const walk: ChainWalk = { actions: new Map(), runs: new Map(), tails: new Map(), newer: new Map() };
  let firstBroken: BrokenRow | undefined;
  let rowsChecked = 0;
  let through: bigint | null = null;
  for await (const accountId of accountsOf(db, scope)) {
    const checked = await verifyAccountChain(db, walk, accountId, scope.checkpoint?.[accountId]);
    rowsChecked += checked.rows;
    if (checked.through !== null && (through === null || checked.through > through)) through = checked.through;
    // The first broken row in log order, whichever account it is in.
    if (checked.broken && (firstBroken === undefined || BigInt(checked.broken.seq!) < BigInt(firstBroken.seq!))) {
      firstBroken = checked.broken;
    }
  }
  const views = firstBroken ? { actionsChecked: 0, runsChecked: 0 } : await checkViews(db, walk, scope);
  firstBroken ??= views.broken;
  const money = firstBroken ? { moneyRowsChecked: 0 } : await checkMoneyRows(db, scope);
  firstBroken ??= money.broken;
  return {
    ok: firstBroken === undefined,
    rowsChecked,
    accountsChecked: walk.tails.size,
    actionsChecked: views.actionsChecked,
    runsChecked: views.runsChecked,
    moneyRowsChecked: money.moneyRowsChecked,
    heads: Object.fromEntries([...walk.tails].map(([id, tail]) => [id, { seq: String(tail.seq), hash: tail.hash }])),
    throughSeq: through === null ? null : String(through),
    ...(firstBroken ? { firstBroken } : {}),
  };
}

/** The accounts whose chains to walk: the one asked for, or every account. */
async function* accountsOf(db: Db, scope: VerifyScope): AsyncGenerator<string> {
  if (scope.accountId !== undefined) {
    yield scope.accountId;
    return;
  }
  let after = '';
  for (;;) {
    const page = await db
      .selectFrom('accounts')
      .select('id')
      .where('id', '>', after)
      .orderBy('id')
      .limit(1000)
      .execute();
    if (page.length === 0) return;
    for (const { id } of page) yield id;
    after = page.at(-1)!.id;
  }
}

/**
 * One account's chain: its head first, then its rows from genesis through the head's seq. Rows
 * appended meanwhile are after the head, and left to the next verification.
 */
async function verifyAccountChain(
  db: Db,
  walk: ChainWalk,
  accountId: string,
  checkpoint: { seq: string; hash: string } | undefined,
): Promise<{ rows: number; through: bigint | null; broken?: BrokenRow }> {
  const checked = await walkAccountChain(db, walk, accountId);
  if (checked.broken) return checked;
  const cut = await cutBack(db, accountId, walk.tails.get(accountId) ?? GENESIS, checkpoint);
  return cut ? { ...checked, broken: cut } : checked;
}

/**
 * The heads seen before, which the chain must still hold: the newest an intact verification saw
 * (audit_heads_seen) and the operator's checkpoint. A chain whose newest rows were deleted and
 * its head set back is intact in itself; only a head seen before tells that it was longer.
 */
async function cutBack(
  db: Db,
  accountId: string,
  tail: ChainPoint,
  checkpoint: { seq: string; hash: string } | undefined,
): Promise<BrokenRow | undefined> {
  const recorded = await db
    .selectFrom('audit_heads_seen')
    .select(['seq', 'hash', 'seen_at'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  const seen = [
    ...(recorded
      ? [{ seq: recorded.seq, hash: recorded.hash, by: `the verification of ${recorded.seen_at.toISOString()}` }]
      : []),
    ...(checkpoint ? [{ seq: BigInt(checkpoint.seq), hash: checkpoint.hash, by: 'the checkpoint' }] : []),
  ];
  for (const point of seen) {
    if (point.seq === 0n) continue;
    const row =
      point.seq > tail.seq
        ? undefined
        : await db
            .selectFrom('action_log')
            .select('hash')
            .where('account_id', '=', accountId)
            .where('seq', '=', point.seq)
            .executeTakeFirst();
    if (row?.hash === point.hash) continue;
    return {
      seq: String(point.seq),
      accountId,
      livemode: null,
      table: 'action_log_heads',
      rowId: accountId,
      columns: [],
      reason:
        point.seq > tail.seq
          ? `the newest rows of the account are missing: ${point.by} saw the log through seq=${point.seq}, and it now ends at seq=${tail.seq}`
          : `the log was rewritten: ${point.by} saw seq=${point.seq} with hash ${point.hash}, which the log no longer holds`,
    };
  }
  return undefined;
}

/** One account's chain, from genesis through its head (see verifyAccountChain). */
async function walkAccountChain(
  db: Db,
  walk: ChainWalk,
  accountId: string,
): Promise<{ rows: number; through: bigint | null; broken?: BrokenRow }> {
  const head = await headOf(db, accountId);
  if ('missing' in head) {
    return {
      rows: 0,
      through: null,
      broken: {
        seq: String(head.missing),
        accountId,
        livemode: null,
        table: 'action_log_heads',
        rowId: accountId,
        columns: [],
        reason: 'the head row of the account is missing, though the account has log rows',
      },
    };
  }
  if (head.seq === 0n) return { rows: 0, through: null };
  const segment = await walkSegment(db, accountId, GENESIS, head.seq, (row) => recordWalked(walk, row));
  if (segment.rows > 0) walk.tails.set(accountId, segment.tail);
  const through = segment.tail.seq === 0n ? null : segment.tail.seq;
  if (segment.broken) {
    const { row, reason } = segment.broken;
    return {
      rows: segment.rows,
      through,
      broken: {
        seq: String(row.seq),
        accountId,
        livemode: row.livemode,
        table: 'action_log',
        rowId: String(row.seq),
        columns: [],
        reason,
      },
    };
  }
  if (segment.tail.seq !== head.seq || segment.tail.hash !== head.hash) {
    return {
      rows: segment.rows,
      through,
      broken: {
        seq: String(head.seq),
        accountId,
        livemode: null,
        table: 'action_log_heads',
        rowId: accountId,
        columns: [],
        reason: 'the newest rows of the account are missing',
      },
    };
  }
  return { rows: segment.rows, through };
}

/**
 * The account's head. Without one, the account has no rows, unless its first append committed
 * after the head was read: then the head is read again, and only rows without any head are broken.
 */
async function headOf(db: Db, accountId: string): Promise<ChainPoint | { missing: bigint }> {
  const head = await readHead(db, accountId);
  if (head) return head;
  const first = await db
    .selectFrom('action_log')
    .select('seq')
    .where('account_id', '=', accountId)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst();
  if (!first) return GENESIS;
  return (await readHead(db, accountId)) ?? { missing: first.seq };
}

/** One line naming the broken row, for the CLI, the API and the dashboard. */
export function describeBroken(broken: BrokenRow): string {
  const where =
    broken.table === 'action_log' || broken.table === 'action_log_heads'
      ? `row seq=${broken.seq} of the action log`
      : `${broken.table} row ${broken.rowId}`;
  return `${where}${broken.accountId === null ? '' : ` (account ${broken.accountId})`}: ${broken.reason}`;
}
