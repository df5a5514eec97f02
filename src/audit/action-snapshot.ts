import { canonicalHash, canonicalJson } from '../core/canonical-json.ts';
import { loadKeyLabels } from '../keys/labels.ts';
import type { Db } from '../db/database.ts';

/**
 * An action as the views finance reads show it (the Actions screen and its detail, GET
 * /agent/actions and its CSV, a run's steps), taken from every table behind them: the
 * agent_actions row, its confirmation, its run's instruction and the labels of the keys involved.
 *
 * Every action-log entry about an action records the snapshot the step left (audit/actions.ts),
 * and verification compares the tables with the newest one (audit/view-check.ts): a field edited
 * outside plainpay is found and named with its table and row. The views are built from snapshots
 * (audit/action-rows.ts), so they show nothing a snapshot does not cover; the one exception, the
 * transaction hash, is checked against the settlement batch that paid it (audit/settlement-hashes.ts).
 */
export interface ActionSnapshot {
  id: string;
  account_id: string;
  livemode: boolean;
  created_at: string;
  channel: string;
  run_id: string | null;
  /** The run's instruction (agent_runs), for the actions of an agent run. */
  instruction: string | null;
  key_id: string | null;
  tool: string;
  input: unknown;
  decision: string;
  reasons: unknown;
  status: string;
  result: unknown;
  error: unknown;
  confirmation_id: string | null;
  confirmation: ConfirmationFacts | null;
  approved_by_key: string | null;
  object_id: string | null;
  amount_settlement_minor: string | null;
  /** "sk_test_4f9Q…x7Kd (name)" of each key above (api_keys), as the dashboard labels keys. */
  key_labels: Record<string, string>;
}

interface ConfirmationFacts {
  /**
   * pending, executed or rejected. The expiry job's `expired` reads as pending: a lapse follows
   * from expires_at and the clock (the views derive it so), and no step of the action records it.
   */
  status: string;
  expires_at: string;
  decided_by_key: string | null;
  decided_at: string | null;
  /** What the approval screen shows of the request: what it does, who asked, over what. */
  tool: string;
  channel: string;
  summary: string;
  input: unknown;
  /** The hash of the canonical input that approving it runs (the binding the approval checks). */
  input_hash: string;
  /** The decision that held it: { outcome, reasons }. */
  decision: unknown;
  /** The key that asked; null lets any approver of the account decide. */
  requested_by_key: string | null;
}

/** The snapshots of these actions (any account), by id; an id without a row is absent. */
export async function loadActionSnapshots(db: Db, ids: readonly string[]): Promise<Map<string, ActionSnapshot>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('agent_actions as a')
    .leftJoin('confirmations as c', 'c.id', 'a.confirmation_id')
    .leftJoin('agent_runs as r', 'r.id', 'a.run_id')
    .select([
      'a.id',
      'a.account_id',
      'a.livemode',
      'a.created_at',
      'a.channel',
      'a.run_id',
      'a.key_id',
      'a.tool',
      'a.input',
      'a.decision',
      'a.reasons',
      'a.status',
      'a.result',
      'a.error',
      'a.confirmation_id',
      'a.approved_by_key',
      'a.object_id',
      'a.amount_settlement_minor',
      'c.id as c_id',
      'c.status as c_status',
      'c.expires_at as c_expires_at',
      'c.decided_by_key as c_decided_by_key',
      'c.decided_at as c_decided_at',
      'c.tool as c_tool',
      'c.channel as c_channel',
      'c.summary as c_summary',
      'c.input as c_input',
      'c.input_hash as c_input_hash',
      'c.decision as c_decision',
      'c.requested_by_key as c_requested_by_key',
      'r.instruction',
    ])
    .where('a.id', 'in', [...ids])
    .execute();
  const labels = new Map<string, Map<string, string>>();
  for (const accountId of new Set(rows.map((row) => row.account_id))) {
    const mine = rows.filter((row) => row.account_id === accountId);
    labels.set(
      accountId,
      await loadKeyLabels(
        db,
        accountId,
        mine.flatMap((row) => [row.key_id, row.approved_by_key, row.c_decided_by_key, row.c_requested_by_key]),
      ),
    );
  }
  const snapshots = new Map<string, ActionSnapshot>();
  for (const row of rows) {
    const accountLabels = labels.get(row.account_id)!;
    const keyLabels: Record<string, string> = {};
    for (const keyId of [row.key_id, row.approved_by_key, row.c_decided_by_key, row.c_requested_by_key]) {
      const label = keyId === null ? undefined : accountLabels.get(keyId);
      if (keyId !== null && label !== undefined) keyLabels[keyId] = label;
    }
    snapshots.set(row.id, {
      id: row.id,
      account_id: row.account_id,
      livemode: row.livemode,
      created_at: row.created_at.toISOString(),
      channel: row.channel,
      run_id: row.run_id,
      instruction: row.instruction ?? null,
      key_id: row.key_id,
      tool: row.tool,
      input: row.input,
      decision: row.decision,
      reasons: row.reasons,
      status: row.status,
      result: row.result ?? null,
      error: row.error ?? null,
      confirmation_id: row.confirmation_id,
      confirmation:
        row.c_id === null
          ? null
          : {
              status: row.c_status === 'expired' ? 'pending' : row.c_status!,
              expires_at: row.c_expires_at!.toISOString(),
              decided_by_key: row.c_decided_by_key,
              decided_at: row.c_decided_at?.toISOString() ?? null,
              tool: row.c_tool!,
              channel: row.c_channel!,
              summary: row.c_summary!,
              input: row.c_input ?? null,
              input_hash: row.c_input_hash!,
              decision: row.c_decision ?? null,
              requested_by_key: row.c_requested_by_key ?? null,
            },
      approved_by_key: row.approved_by_key,
      object_id: row.object_id,
      amount_settlement_minor: row.amount_settlement_minor?.toString() ?? null,
      key_labels: keyLabels,
    });
  }
  return snapshots;
}

/** One action's snapshot; the caller knows the row exists (it wrote it in this transaction). */
export async function loadActionSnapshot(db: Db, id: string): Promise<ActionSnapshot> {
  const snapshot = (await loadActionSnapshots(db, [id])).get(id);
  if (!snapshot) throw new Error(`action ${id} has no row to snapshot`);
  return snapshot;
}

/**
 * What a snapshot is compared by: its canonical JSON, hashed. A snapshot read back from a log
 * entry's payload hashes the same as the one written, since canonical JSON survives a round trip.
 */
export function snapshotHash(snapshot: unknown): string {
  return canonicalHash(snapshot);
}

/** A field of a view, named by the table column it is stored in. */
export interface StoredField {
  table: 'agent_actions' | 'confirmations' | 'agent_runs' | 'api_keys';
  rowId: string;
  column: string;
}

/** The stored fields in which `current` differs from `recorded` (two snapshots of one action). */
export function changedFields(recorded: ActionSnapshot, current: ActionSnapshot): StoredField[] {
  const differs = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) !== canonicalJson(b ?? null);
  const changed: StoredField[] = [];
  const keys = new Set([...Object.keys(recorded), ...Object.keys(current)]) as Set<keyof ActionSnapshot>;
  for (const key of keys) {
    if (!differs(recorded[key], current[key])) continue;
    if (key === 'instruction') {
      changed.push({ table: 'agent_runs', rowId: current.run_id ?? recorded.run_id ?? '', column: 'instruction' });
    } else if (key === 'confirmation') {
      const before = recorded.confirmation ?? {};
      const after = current.confirmation ?? {};
      const rowId = current.confirmation_id ?? recorded.confirmation_id ?? '';
      for (const column of new Set([...Object.keys(before), ...Object.keys(after)])) {
        if (differs(before[column as keyof typeof before], after[column as keyof typeof after])) {
          changed.push({ table: 'confirmations', rowId, column });
        }
      }
    } else if (key === 'key_labels') {
      for (const keyId of new Set([...Object.keys(recorded.key_labels), ...Object.keys(current.key_labels)])) {
        if (recorded.key_labels[keyId] !== current.key_labels[keyId]) {
          // The label is built from all three (dashboard/key-labels.ts).
          changed.push({ table: 'api_keys', rowId: keyId, column: 'name/display_prefix/last4' });
        }
      }
    } else {
      changed.push({ table: 'agent_actions', rowId: current.id, column: key });
    }
  }
  // The action's own row first: a changed run_id or confirmation_id also changes what they join to.
  return changed.sort((a, b) => TABLE_ORDER.indexOf(a.table) - TABLE_ORDER.indexOf(b.table));
}

const TABLE_ORDER: readonly StoredField['table'][] = ['agent_actions', 'confirmations', 'agent_runs', 'api_keys'];
