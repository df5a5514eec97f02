import type { Db, ModeScope, SettlementSchedule } from '../database.ts';

// An account's settlement schedule per mode (settlement_schedules): the rules of what it may be
// and when it holds a transfer are src/settlement/schedules.ts's.

export interface StoredSettlementSchedule {
  schedule: SettlementSchedule;
  /** USDC minor units, for threshold. */
  thresholdMinor: bigint | null;
  updatedAt: Date | null;
}

export async function loadSettlementSchedule(db: Db, owner: ModeScope): Promise<StoredSettlementSchedule> {
  const row = await db
    .selectFrom('settlement_schedules')
    .selectAll()
    .where('account_id', '=', owner.accountId)
    .where('livemode', '=', owner.livemode)
    .executeTakeFirst();
  if (!row) return { schedule: 'instant', thresholdMinor: null, updatedAt: null };
  return { schedule: row.schedule, thresholdMinor: row.threshold_minor, updatedAt: row.updated_at };
}

export async function saveSettlementSchedule(
  db: Db,
  owner: ModeScope,
  value: { schedule: SettlementSchedule; thresholdMinor: bigint | null },
  keyId: string | null,
  at: Date,
): Promise<StoredSettlementSchedule> {
  const row = {
    schedule: value.schedule,
    threshold_minor: value.thresholdMinor,
    updated_by_key: keyId,
    updated_at: at,
  };
  await db
    .insertInto('settlement_schedules')
    .values({ account_id: owner.accountId, livemode: owner.livemode, ...row })
    .onConflict((oc) => oc.columns(['account_id', 'livemode']).doUpdateSet(row))
    .execute();
  return { schedule: value.schedule, thresholdMinor: value.thresholdMinor, updatedAt: at };
}
