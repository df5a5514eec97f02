import { canonicalJson } from '../core/canonical-json.ts';
import type { Db } from '../db/database.ts';
import type { ActionLogRow, AgentRunRow } from '../db/tables/money.ts';
import {
  type ActionSnapshot,
  changedFields,
  loadActionSnapshots,
  type StoredField,
  snapshotHash,
} from './action-snapshot.ts';
import { type ChainPoint, GENESIS, readHead, walkSegment } from './chain.ts';
import type { MoneyTable } from './money-tables.ts';
import { loadSettlementHashes } from './settlement-hashes.ts';

/** A row found edited, added or missing, named by its table and id. */
export interface BrokenRow {
  /** The log entry at fault, or the newest one that recorded the row (null: no entry records it). */
  seq: string | null;
  /** The merchant whose row it is (null: the service's own, such as a settlement batch). */
  accountId: string | null;
  /** The row's mode (null: the account's chain as a whole, or a row of no mode). */
  livemode: boolean | null;
  table: 'action_log' | 'action_log_heads' | StoredField['table'] | MoneyTable;
  /** The row's id (a seq for action_log). */
  rowId: string;
  /** The columns that differ from what the log recorded, where known. */
  columns: string[];
  reason: string;
}

/** What the chain check saw, for the views' check: the newest entry of each action and run. */
export interface ChainWalk {
  /** The newest entry about each action; snapshotHash null: written before entries carried snapshots. */
  actions: Map<string, { seq: bigint; accountId: string; livemode: boolean; snapshotHash: string | null }>;
  /** The run.finished entry of each run, by the hash of the fields the runs views show. */
  runs: Map<string, { seq: bigint; hash: string }>;
  /** The newest entry of each account the check reached: its head, read before its rows. */
  tails: Map<string, ChainPoint>;
  /**
   * Entries appended after the chain check, by account, as far as they were read and verified
   * (linked to the walked chain, up to a head read after it): what a row that moved on while the
   * check ran is compared with. Filled on demand.
   */
  newer: Map<string, NewerEntries>;
}

interface NewerEntries {
  tail: ChainPoint;
  /** The snapshot hashes each action's newer entries recorded. */
  actions: Map<string, Set<string>>;
  /** The run-fields hashes each run's newer run.finished entries recorded. */
  runs: Map<string, Set<string>>;
}

/** The run fields the runs views show, as agent_runs and the run.finished entry both hold them. */
const RUN_FIELDS = [
  'instruction',
  'model',
  'channel',
  'key_id',
  'dry_run',
  'status',
  'reply',
  'steps',
  'usage',
] as const;

function runFields(source: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(RUN_FIELDS.map((field) => [field, source[field] ?? null]));
}

/** Notes what an intact entry recorded, in log order (the newest wins). */
export function recordWalked(walk: ChainWalk, row: ActionLogRow): void {
  const payload = (row.payload ?? {}) as { action?: unknown };
  if (row.action_id !== null) {
    walk.actions.set(row.action_id, {
      seq: row.seq,
      accountId: row.account_id,
      livemode: row.livemode,
      snapshotHash: payload.action === undefined ? null : snapshotHash(payload.action),
    });
  }
  if (row.entry_type === 'run.finished' && row.run_id !== null) {
    walk.runs.set(row.run_id, { seq: row.seq, hash: snapshotHash(runFields(payload as Record<string, unknown>)) });
  }
}

const PAGE = 500;

/**
 * Compares the tables behind the views with the walked chain: each agent_actions row (with its
 * confirmation, run instruction and key labels) with the snapshot of its newest entry, each
 * finished agent_runs row with its run.finished entry, and each settlement hash an action shows
 * with the batch that paid it. Returns the first difference.
 */
export async function checkViews(
  db: Db,
  walk: ChainWalk,
  scope: { accountId?: string },
): Promise<{ actionsChecked: number; runsChecked: number; broken?: BrokenRow }> {
  let actionsChecked = 0;
  const seen = new Set<string>();
  let after = '';
  for (;;) {
    let query = db.selectFrom('agent_actions').select('id').where('id', '>', after);
    if (scope.accountId !== undefined) query = query.where('account_id', '=', scope.accountId);
    const ids = (await query.orderBy('id').limit(PAGE).execute()).map((row) => row.id);
    if (ids.length === 0) break;
    after = ids.at(-1)!;
    const snapshots = await loadActionSnapshots(db, ids);
    for (const current of snapshots.values()) {
      seen.add(current.id);
      actionsChecked++;
      const broken = await checkAction(db, walk, current);
      if (broken) return { actionsChecked, runsChecked: 0, broken };
    }
    for (const hash of await loadSettlementHashes(
      db,
      [...snapshots.values()].map((s) => s.object_id),
    )) {
      if (hash.txHash !== hash.batchTxHash) {
        const action = [...snapshots.values()].find((s) => s.object_id === hash.objectId)!;
        return {
          actionsChecked,
          runsChecked: 0,
          broken: {
            seq: null,
            accountId: action.account_id,
            livemode: action.livemode,
            table: hash.table,
            rowId: hash.rowId,
            columns: [hash.table === 'payouts' ? 'tx_hash' : 'settlement_tx_hash'],
            reason: `the transaction hash it shows for action ${action.id} is not that of the settlement batch that paid it`,
          },
        };
      }
    }
  }
  for (const [id, entry] of walk.actions) {
    if (entry.snapshotHash !== null && !seen.has(id)) {
      return {
        actionsChecked,
        runsChecked: 0,
        broken: {
          seq: String(entry.seq),
          accountId: entry.accountId,
          livemode: entry.livemode,
          table: 'agent_actions',
          rowId: id,
          columns: [],
          reason: `the row is missing (deleted), though log entry seq=${entry.seq} recorded it`,
        },
      };
    }
  }
  return checkRuns(db, walk, scope, actionsChecked);
}

async function checkAction(db: Db, walk: ChainWalk, current: ActionSnapshot): Promise<BrokenRow | undefined> {
  const recorded = walk.actions.get(current.id);
  // Recorded before entries carried snapshots (migration 016): its entries alone are verified.
  if (recorded?.snapshotHash === null) return undefined;
  const hash = snapshotHash(current);
  if (recorded?.snapshotHash === hash) return undefined;
  const accountId = recorded?.accountId ?? current.account_id;
  if (await recordedSinceWalk(db, walk, accountId, 'actions', current.id, hash)) return undefined;
  if (!recorded) {
    return {
      seq: null,
      accountId,
      livemode: current.livemode,
      table: 'agent_actions',
      rowId: current.id,
      columns: [],
      reason: 'no log entry records this action (the row was added outside plainpay)',
    };
  }
  const entry = await db
    .selectFrom('action_log')
    .select('payload')
    .where('seq', '=', recorded.seq)
    .executeTakeFirstOrThrow();
  const fields = changedFields((entry.payload as { action: ActionSnapshot }).action, current);
  const first = fields[0] ?? { table: 'agent_actions', rowId: current.id, column: 'id' };
  const columns = fields.filter((f) => f.table === first.table && f.rowId === first.rowId).map((f) => f.column);
  return {
    seq: String(recorded.seq),
    accountId,
    livemode: current.livemode,
    table: first.table,
    rowId: first.rowId,
    columns,
    reason: `${columns.join(', ')} changed since log entry seq=${recorded.seq} recorded action ${current.id}`,
  };
}

/**
 * Whether an entry newer than the chain check records this state of an action or run: it moved on
 * (approved, rejected, finished) while the check ran, and its row was read after the account's
 * head. Only entries that are linked to the walked chain and covered by a head read now count,
 * so a row added to the log outside plainpay cannot vouch for an edited one.
 */
async function recordedSinceWalk(
  db: Db,
  walk: ChainWalk,
  accountId: string,
  kind: 'actions' | 'runs',
  id: string,
  hash: string,
): Promise<boolean> {
  let newer = walk.newer.get(accountId);
  if (!newer) {
    newer = { tail: walk.tails.get(accountId) ?? GENESIS, actions: new Map(), runs: new Map() };
    walk.newer.set(accountId, newer);
  }
  const known = newer;
  const records = () => known[kind].get(id)?.has(hash) === true;
  if (records()) return true;
  const head = await readHead(db, accountId);
  if (!head || head.seq <= known.tail.seq) return false;
  const note = (map: Map<string, Set<string>>, key: string, value: string): void => {
    const hashes = map.get(key) ?? new Set<string>();
    hashes.add(value);
    map.set(key, hashes);
  };
  const segment = await walkSegment(db, accountId, known.tail, head.seq, (row) => {
    const payload = (row.payload ?? {}) as Record<string, unknown>;
    if (row.action_id !== null && payload.action !== undefined) {
      note(known.actions, row.action_id, snapshotHash(payload.action));
    }
    if (row.entry_type === 'run.finished' && row.run_id !== null) {
      note(known.runs, row.run_id, snapshotHash(runFields(payload)));
    }
  });
  // A broken newer row stops here; the next verification walks up to it and names it.
  known.tail = segment.tail;
  return records();
}

async function checkRuns(
  db: Db,
  walk: ChainWalk,
  scope: { accountId?: string },
  actionsChecked: number,
): Promise<{ actionsChecked: number; runsChecked: number; broken?: BrokenRow }> {
  let runsChecked = 0;
  let after = '';
  for (;;) {
    let query = db.selectFrom('agent_runs').selectAll().where('id', '>', after).where('status', '!=', 'running');
    if (scope.accountId !== undefined) query = query.where('account_id', '=', scope.accountId);
    const runs = await query.orderBy('id').limit(PAGE).execute();
    if (runs.length === 0) break;
    after = runs.at(-1)!.id;
    for (const run of runs) {
      runsChecked++;
      const broken = await checkRun(db, walk, run);
      if (broken) return { actionsChecked, runsChecked, broken };
    }
  }
  return { actionsChecked, runsChecked };
}

async function checkRun(db: Db, walk: ChainWalk, run: AgentRunRow): Promise<BrokenRow | undefined> {
  const current = runFields(run);
  const hash = snapshotHash(current);
  const recorded = walk.runs.get(run.id);
  if (recorded?.hash === hash) return undefined;
  if (await recordedSinceWalk(db, walk, run.account_id, 'runs', run.id, hash)) return undefined;
  const base = { accountId: run.account_id, livemode: run.livemode, table: 'agent_runs' as const, rowId: run.id };
  if (!recorded) {
    return { ...base, seq: null, columns: [], reason: 'no run.finished entry records this finished run' };
  }
  const entry = await db
    .selectFrom('action_log')
    .select('payload')
    .where('seq', '=', recorded.seq)
    .executeTakeFirstOrThrow();
  const logged = runFields(entry.payload as Record<string, unknown>);
  const columns = RUN_FIELDS.filter((field) => canonicalJson(logged[field]) !== canonicalJson(current[field]));
  return {
    ...base,
    seq: String(recorded.seq),
    columns,
    reason: `${columns.join(', ')} changed since log entry seq=${recorded.seq} recorded the run`,
  };
}
