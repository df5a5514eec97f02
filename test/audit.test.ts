import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { appendActionLog, describeBroken, lockAccountActions, verifyActionLog } from '../src/audit/action-log.ts';
import { executeTool } from '../src/pipeline/execute-tool.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createAccount } from '../src/accounts/create-account.ts';
import { createSecretBox } from '../src/core/secret-box.ts';
import type { Db } from '../src/db/database.ts';
import { getBalance } from '../tools/get-balance.ts';
import { testAccount, testRuntime, type TestRuntime } from './support/harness.ts';
import { firstKeyAuth } from './support/money.ts';
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

/** A recorded action of a fresh account: a read over MCP (every MCP call is logged). */
async function recordedAction(runtime: TestRuntime): Promise<{ accountId: string; actionId: string }> {
  const { accountId } = await testAccount(runtime);
  const actor = { ...(await firstKeyAuth(runtime, accountId)), channel: 'mcp' as const };
  const result = await executeTool(getBalance, {}, { runtime, actor });
  return { accountId, actionId: result.kind === 'executed' ? result.actionId! : '' };
}

describe('the tables behind the action views', () => {
  it('an action row edited, deleted or added outside plainpay is named, with the column', async () => {
    const runtime = await testRuntime();
    const { accountId, actionId } = await recordedAction(runtime);
    expect(await verifyActionLog(runtime.db, { accountId })).toMatchObject({ ok: true, actionsChecked: 1 });

    await sql`update agent_actions set tool = 'create_payout' where id = ${actionId}`.execute(runtime.db);
    const edited = await verifyActionLog(runtime.db, { accountId });
    expect(edited.firstBroken).toMatchObject({ table: 'agent_actions', rowId: actionId, columns: ['tool'] });
    expect(describeBroken(edited.firstBroken!)).toMatch(
      new RegExp(`^agent_actions row ${actionId} \\(account ${accountId}\\): tool changed since log entry seq=\\d+`),
    );
    await sql`update agent_actions set tool = 'get_balance' where id = ${actionId}`.execute(runtime.db);
    expect((await verifyActionLog(runtime.db, { accountId })).ok).toBe(true);

    const row = await runtime.db
      .selectFrom('agent_actions')
      .selectAll()
      .where('id', '=', actionId)
      .executeTakeFirstOrThrow();
    await sql`delete from agent_actions where id = ${actionId}`.execute(runtime.db);
    expect((await verifyActionLog(runtime.db, { accountId })).firstBroken).toMatchObject({
      table: 'agent_actions',
      rowId: actionId,
      reason: expect.stringMatching(/missing \(deleted\)/),
    });
    await sql`insert into agent_actions (id, account_id, livemode, channel, key_id, tool, input, decision, reasons, status, created_at, updated_at)
      values ('act_forged', ${accountId}, false, 'api', ${row.key_id}, 'create_payout', '{}', 'allow', '[]', 'executed', now(), now())`.execute(
      runtime.db,
    );
    expect((await verifyActionLog(runtime.db, { accountId })).firstBroken).toMatchObject({
      table: 'agent_actions',
      rowId: 'act_forged',
      reason: expect.stringMatching(/no log entry records this action/),
    });
    // One account's verification is about that account only.
    const other = await recordedAction(runtime);
    expect((await verifyActionLog(runtime.db, { accountId: other.accountId })).ok).toBe(true);
  });
});

/** One entry appended as the service does: in its own transaction, under the account's lock. */
async function appendOne(db: Db, accountId: string, i: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, accountId);
    await appendActionLog(trx, {
      accountId,
      livemode: false,
      entryType: 'action.executed',
      payload: { tool: 'create_payout', input: { amount: i + 1 } },
      at: new Date(Date.UTC(2026, 10, 22, 0, 0, i)),
    });
  });
}

/**
 * Runs `append(i)` for i below `count` beside repeated runs of `verify`, which go on until the
 * appends are done (at least twice); returns every report.
 */
async function verifyWhileAppending<T>(
  count: number,
  append: (i: number) => Promise<void>,
  verify: () => Promise<T[]>,
): Promise<T[]> {
  let appending = true;
  const reports: T[] = [];
  await Promise.all([
    (async () => {
      try {
        for (let i = 0; i < count; i++) await append(i);
      } finally {
        appending = false;
      }
    })(),
    (async () => {
      for (let round = 0; appending || round < 2; round++) reports.push(...(await verify()));
    })(),
  ]);
  return reports;
}

describe('verification beside a running service', () => {
  it('never reports a broken log while entries of several accounts are appended', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-audit-race-'));
    try {
      // A database of its own: the whole-log check (the CLI's) must not see other tests' tampering.
      const handle = await connectDatabase({ kind: 'pglite', dataDir: join(dir, 'pgdata') });
      try {
        await migrateToLatest(handle.db);
        const box = createSecretBox(Buffer.alloc(32, 7));
        const accounts = [
          (await createAccount(handle.db, box, { name: 'A', livemode: false })).account,
          (await createAccount(handle.db, box, { name: 'B', livemode: false })).account,
        ];
        const reports = await verifyWhileAppending(
          80,
          // Alternating accounts, so an entry of one commits between reads of the other's.
          (i) => appendOne(handle.db, accounts[i % 2]!, i),
          async () => [
            await verifyActionLog(handle.db),
            await verifyActionLog(handle.db, { accountId: accounts[0]! }),
            await verifyActionLog(handle.db, { accountId: accounts[1]! }),
          ],
        );
        for (const report of reports) expect(report.firstBroken).toBeUndefined();
        expect(await verifyActionLog(handle.db)).toMatchObject({ ok: true, rowsChecked: 80, accountsChecked: 2 });
      } finally {
        await handle.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('never reports a broken log or view while actions are recorded', async () => {
    const runtime = await testRuntime();
    const { accountId } = await testAccount(runtime);
    const actor = { ...(await firstKeyAuth(runtime, accountId)), channel: 'mcp' as const };
    const reports = await verifyWhileAppending(
      40,
      // Recorded actions (their rows and entries) and bare entries, each in its own transaction.
      async (i) => {
        if (i % 2 === 0) await executeTool(getBalance, {}, { runtime, actor });
        else await appendOne(runtime.db, accountId, i);
      },
      async () => [await verifyActionLog(runtime.db, { accountId })],
    );
    for (const report of reports) expect(report.firstBroken).toBeUndefined();
    expect(await verifyActionLog(runtime.db, { accountId })).toMatchObject({ ok: true, actionsChecked: 20 });
  }, 120_000);
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
