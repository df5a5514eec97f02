// findScoped and scopedRow: the one find-by-id of a caller's own row (src/db/repositories/scoped.ts).
// A row of another account, or of the caller's other mode, must read as missing: every 404 and
// every "no such cursor" of the API rests on it.

import { beforeAll, describe, expect, it } from 'vitest';
import { testAccount, testRuntime } from '../../../test/support/harness.ts';
import type { Db, ModeScope } from '../database.ts';
import { findScoped, scopedRow } from './scoped.ts';

let db: Db;
let owner: ModeScope;
let stranger: ModeScope;

async function insertRun(scope: ModeScope, id: string): Promise<void> {
  await db
    .insertInto('agent_runs')
    .values({
      id,
      account_id: scope.accountId,
      livemode: scope.livemode,
      channel: 'agent',
      instruction: `Settle for ${id}`,
      model: 'offline',
      dry_run: false,
      status: 'completed',
      reply: 'Done.',
    })
    .execute();
}

beforeAll(async () => {
  const runtime = await testRuntime();
  db = runtime.db;
  owner = { accountId: (await testAccount(runtime)).accountId, livemode: false };
  stranger = { accountId: (await testAccount(runtime)).accountId, livemode: false };
  await insertRun(owner, 'run_scoped_test');
  await insertRun({ ...owner, livemode: true }, 'run_scoped_live');
  await insertRun(stranger, 'run_scoped_stranger');
});

describe('findScoped', () => {
  it("returns the caller's own row, whole", async () => {
    const row = await findScoped(db, 'agent_runs', owner, 'run_scoped_test');
    expect(row).toMatchObject({
      id: 'run_scoped_test',
      account_id: owner.accountId,
      livemode: false,
      instruction: 'Settle for run_scoped_test',
    });
  });

  it("does not find another account's row, the other mode's, or an unknown id", async () => {
    expect(await findScoped(db, 'agent_runs', owner, 'run_scoped_stranger')).toBeUndefined();
    expect(await findScoped(db, 'agent_runs', owner, 'run_scoped_live')).toBeUndefined();
    expect(await findScoped(db, 'agent_runs', owner, 'run_nope')).toBeUndefined();
  });

  it('finds the other mode’s row for a caller in that mode, and the stranger’s row for the stranger', async () => {
    expect((await findScoped(db, 'agent_runs', { ...owner, livemode: true }, 'run_scoped_live'))?.id).toBe(
      'run_scoped_live',
    );
    expect((await findScoped(db, 'agent_runs', stranger, 'run_scoped_stranger'))?.id).toBe('run_scoped_stranger');
  });
});

describe('scopedRow', () => {
  it('selects the columns asked for, and keeps the scope under further conditions', async () => {
    const own = await scopedRow(db, 'agent_runs', owner, 'run_scoped_test')
      .select(['id', 'status'])
      .where('status', '=', 'completed')
      .executeTakeFirst();
    expect(own).toEqual({ id: 'run_scoped_test', status: 'completed' });
    const theirs = await scopedRow(db, 'agent_runs', owner, 'run_scoped_stranger')
      .select('id')
      .where('status', '=', 'completed')
      .executeTakeFirst();
    expect(theirs).toBeUndefined();
  });

  it('names the id, the account and the mode in the condition, so the primary key answers it', () => {
    const query = scopedRow(db, 'payouts', owner, 'po_1').select('id').forUpdate().compile();
    expect(query.sql).toBe(
      'select "id" from "payouts" where "id" = $1 and "account_id" = $2 and "livemode" = $3 for update',
    );
    expect(query.parameters).toEqual(['po_1', owner.accountId, false]);
  });
});
