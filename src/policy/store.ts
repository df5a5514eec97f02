import type { Db, ModeScope } from '../db/database.ts';
import { lockAccount } from '../db/repositories/accounts.ts';
import { findLatestPolicy, insertPolicy } from '../db/repositories/policies.ts';
import { DEFAULT_POLICY, type Policy, PolicySchema } from './policy-schema.ts';

export interface StoredPolicy {
  /** 0 while the account runs on the defaults (never saved). */
  version: number;
  policy: Policy;
  updatedAt: Date | null;
}

/**
 * The policy in force for an account in one mode (each mode has its own, so a test key can try
 * policies out without loosening the one that governs live money): its newest saved version, or
 * the defaults.
 */
export async function loadPolicy(db: Db, owner: ModeScope): Promise<StoredPolicy> {
  const row = await findLatestPolicy(db, owner);
  if (!row) return { version: 0, policy: DEFAULT_POLICY, updatedAt: null };
  return { version: row.version, policy: PolicySchema.parse(row.policy), updatedAt: row.created_at };
}

/** Saves a new version (the old ones stay, for the audit trail). */
export async function savePolicy(
  db: Db,
  owner: ModeScope,
  policy: Policy,
  keyId: string | null,
  at: Date,
): Promise<StoredPolicy> {
  // Concurrent saves of one account queue on the account row, so versions never collide.
  await lockAccount(db, owner.accountId);
  const current = await loadPolicy(db, owner);
  const version = current.version + 1;
  await insertPolicy(db, {
    account_id: owner.accountId,
    livemode: owner.livemode,
    version,
    policy: JSON.stringify(policy),
    updated_by_key: keyId,
    created_at: at,
  });
  return { version, policy, updatedAt: at };
}
