import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { appendActionLog, lockAccountActions, verifyActionLog } from '../src/audit/action-log.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createAccount } from '../src/accounts/create-account.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import type { Db } from '../src/db/database.ts';
import { testAccount, testRuntime } from './support/harness.ts';
import { CLI, childEnv } from './support/server.ts';

const run = promisify(execFile);

async function writeEntries(db: Db, accountId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await lockAccountActions(db, accountId);
    await appendActionLog(db, {
      accountId,
      livemode: false,
      entryType: 'action.executed',
      actionId: `act_${i}`,
      payload: {
        tool: 'create_payout',
        input: { amount: i + 1, to_address: '0x1111111111111111111111111111111111111111' },
      },
      at: new Date(Date.UTC(2026, 10, 22, 0, 0, i)),
    });
  }
}

/** Simulates someone with database superuser rights editing history (the table refuses UPDATE otherwise). */
async function tamper(db: Db, seq: bigint, change: string): Promise<void> {
  await sql`alter table action_log disable trigger action_log_append_only`.execute(db);
  await sql.raw(`update action_log set payload = '${change}' where seq = ${seq}`).execute(db);
  await sql`alter table action_log enable trigger action_log_append_only`.execute(db);
}

describe('the action log', () => {
  it('refuses UPDATE and DELETE', async () => {
    const runtime = await testRuntime();
    const { accountId } = await testAccount(runtime);
    await writeEntries(runtime.db, accountId, 1);
    await expect(
      sql`update action_log set entry_type = 'x' where account_id = ${accountId}`.execute(runtime.db),
    ).rejects.toThrow(/append-only/);
    await expect(sql`delete from action_log where account_id = ${accountId}`.execute(runtime.db)).rejects.toThrow(
      /append-only/,
    );
  });

  it('verifies intact, and names the row that was edited', async () => {
    const runtime = await testRuntime();
    const { accountId } = await testAccount(runtime);
    await writeEntries(runtime.db, accountId, 5);
    expect((await verifyActionLog(runtime.db)).ok).toBe(true);
    const rows = await runtime.db
      .selectFrom('action_log')
      .select('seq')
      .where('account_id', '=', accountId)
      .orderBy('seq')
      .execute();
    const target = rows[2]!.seq;
    await tamper(
      runtime.db,
      target,
      '{"tool":"create_payout","input":{"amount":1000000,"to_address":"0x9999999999999999999999999999999999999999"}}',
    );
    const report = await verifyActionLog(runtime.db);
    expect(report.ok).toBe(false);
    expect(report.firstBroken).toMatchObject({ seq: String(target), accountId });
    expect(report.firstBroken!.reason).toMatch(/edited/);
  });
});

describe('plainpay audit verify', () => {
  it('exits 0 on an intact log and 1 naming the edited row', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-audit-'));
    try {
      const dataDir = join(dir, 'pgdata');
      const handle = await connectDatabase({ kind: 'pglite', dataDir });
      await migrateToLatest(handle.db);
      const { account } = await createAccount(handle.db, createSecretBox(Buffer.alloc(32, 7)), {
        name: 'Audit',
        livemode: false,
      });
      await writeEntries(handle.db, account, 4);
      await handle.close();

      const ok = await run(process.execPath, [CLI, 'audit', 'verify'], { env: childEnv(dir) });
      expect(ok.stdout).toContain('Action log intact: 4 rows');

      const again = await connectDatabase({ kind: 'pglite', dataDir });
      const second = (await again.db.selectFrom('action_log').select('seq').orderBy('seq').execute())[1]!.seq;
      await tamper(again.db, second, '{"tool":"create_payout","input":{"amount":5}}');
      await again.close();

      const broken = await run(process.execPath, [CLI, 'audit', 'verify'], { env: childEnv(dir) }).catch((e) => e);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toContain(`row seq=${second}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
