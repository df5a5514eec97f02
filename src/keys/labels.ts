import type { Db } from '../db/database.ts';
import { listApiKeyLabels } from '../db/repositories/api-keys.ts';

/** "sk_test_4f9Q…x7Kd (name)" for each of the account's keys among `ids`: who asked, who approved. */
export async function loadKeyLabels(
  db: Db,
  accountId: string,
  ids: readonly (string | null)[],
): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await listApiKeyLabels(db, accountId, wanted);
  return new Map(
    rows.map((row) => [row.id, `${row.display_prefix}…${row.last4}${row.name === null ? '' : ` (${row.name})`}`]),
  );
}
