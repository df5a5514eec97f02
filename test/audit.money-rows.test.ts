import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { appendActionLog, lockAccountActions, verifyActionLog } from '../src/audit/action-log.ts';
import { MONEY_TABLES } from '../src/audit/money-tables.ts';
import { auditVerificationJob } from '../src/audit/verification-job.ts';
import { auditCheckpoint, auditVerify } from '../src/cli/audit.ts';
import { createLogger } from '../src/core/logger.ts';
import type { CliOutput } from '../src/cli/command.ts';
import type { Actor } from '../src/core/tool.ts';
import { connectDatabase } from '../src/db/connect.ts';
import type { Database } from '../src/db/database.ts';
import { issueApiKey } from '../src/keys/api-keys.ts';
import { executedOutput, executeTool } from '../src/pipeline/execute-tool.ts';
import { createPayout } from '../tools/create-payout.ts';
import { refundPayment } from '../tools/refund-payment.ts';
import {
  bearer,
  fileDatabaseUrl,
  isPostgres,
  type TestRuntime,
  tamperingWithMoneyRowsOnPurpose,
  testApp,
  testRuntime,
} from './support/harness.ts';
import { ADDRESS_A, ADDRESS_B, post } from './support/money.ts';
import { merchantActor, settledPayment } from './support/tool-tests.ts';

/**
 * Issue 33, item 5: the money rows themselves are covered. Each edit, deletion or insertion made
 * directly in the database, from a session that is not plainpay's, with or without the recording
 * trigger, is named by `GET /v1/audit/verify` and `plainpay audit verify`; so is a log cut back
 * past a head a verification (or the operator's checkpoint) saw.
 */

let runtime: TestRuntime;
let app: FastifyInstance;
tamperingWithMoneyRowsOnPurpose();

beforeAll(async () => {
  runtime = await testRuntime();
  app = await testApp(runtime);
});

/**
 * Runs `statements` as someone with SQL access who is not plainpay: a session without plainpay's
 * mark, and with the named triggers disabled for the while (a superuser can do both).
 */
async function outside(statements: string[], disabled: Array<[table: string, trigger: string]> = []): Promise<void> {
  await runtime.db.transaction().execute(async (trx) => {
    await sql`set local plainpay.session = 'psql'`.execute(trx);
    for (const [table, trigger] of disabled)
      await sql.raw(`alter table ${table} disable trigger ${trigger}`).execute(trx);
    for (const statement of statements) await sql.raw(statement).execute(trx);
    for (const [table, trigger] of disabled)
      await sql.raw(`alter table ${table} enable trigger ${trigger}`).execute(trx);
  });
}

/** What the API's verification (the account's) says: the broken row's table and id, or null. */
async function apiVerify(apiKey: string) {
  const res = await app.inject({ method: 'GET', url: '/v1/audit/verify', headers: bearer(apiKey) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** `plainpay audit verify` (every account), run as the CLI runs it against a database. */
async function cliVerify(args: string[] = []): Promise<{ code: number; report: { ok: boolean } }> {
  let stdout = '';
  const out = { stdout: (text: string) => (stdout += text), stderr: () => {} } as unknown as CliOutput;
  const work = auditVerify.parse(['--json', ...args]);
  const code = await work({ db: runtime.db as Kysely<Database>, clock: runtime.clock } as never, out);
  return { code, report: JSON.parse(stdout) };
}

async function expectNamed(
  apiKey: string,
  accountId: string,
  table: string,
  rowId: string,
  reason: RegExp,
): Promise<void> {
  const report = await verifyActionLog(runtime.db, { accountId });
  expect(report.ok).toBe(false);
  expect(report.firstBroken).toMatchObject({ table, rowId });
  expect(report.firstBroken!.reason).toMatch(reason);
  const api = await apiVerify(apiKey);
  expect(api.ok).toBe(false);
  expect(api.broken).toMatchObject({ table, row_id: rowId });
  expect(api.broken.message).toContain(rowId);
  // The CLI verifies every account: it names a broken row (this one, or another test's before it).
  const cli = await cliVerify();
  expect(cli.code).toBe(1);
  expect(cli.report.ok).toBe(false);
}

/** A merchant with a funded balance, its actor and its secret key. */
async function merchant(funds = 0, channel: Actor['channel'] = 'api') {
  const actor = await merchantActor(runtime, { app, funds, channel });
  const key = await issueApiKey(runtime.db, {
    accountId: actor.accountId,
    livemode: false,
    scopes: ['payments:read', 'agent'],
    name: 'finance',
  });
  return { actor, apiKey: key.secret };
}

describe('audit verify covers the money rows', () => {
  it('an intact account verifies, with its money rows counted', async () => {
    const { actor, apiKey } = await merchant(100);
    await executeTool(createPayout, { amount: 3, to_address: ADDRESS_A }, { runtime, actor });
    const report = await verifyActionLog(runtime.db, { accountId: actor.accountId });
    expect(report.ok).toBe(true);
    expect(report.moneyRowsChecked).toBeGreaterThanOrEqual(3);
    expect((await apiVerify(apiKey)).money_rows_checked).toBe(report.moneyRowsChecked);
  });

  it('a held-then-approved 500 USDC payout changed to 5 USDC to another address is named', async () => {
    const { actor, apiKey } = await merchant(1_000, 'agent');
    // The agent's first payout to an address is held; another principal approves it.
    const held = await executeTool(createPayout, { amount: 500, to_address: ADDRESS_A }, { runtime, actor });
    if (held.kind !== 'confirmation_required') throw new Error(`expected a hold, got ${held.kind}`);
    const approver = await issueApiKey(runtime.db, {
      accountId: actor.accountId,
      livemode: false,
      scopes: ['approvals'],
      name: 'approver',
    });
    const approved = await post(app, approver.secret, `/v1/confirmations/${held.confirmation.confirmation_id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    const payoutId: string = approved.json().result.id;
    expect((await verifyActionLog(runtime.db, { accountId: actor.accountId })).ok).toBe(true);

    await outside([`update payouts set amount_minor = 5000000, to_address = '${ADDRESS_B}' where id = '${payoutId}'`]);
    await expectNamed(apiKey, actor.accountId, 'payouts', payoutId, /session that is not plainpay's/);
  });

  it("a payout's status changed with the recording trigger disabled is named", async () => {
    const { actor, apiKey } = await merchant(100);
    const payout = executedOutput(
      await executeTool(createPayout, { amount: 7, to_address: ADDRESS_A }, { runtime, actor }),
    );
    await outside(
      [`update payouts set status = 'failed' where id = '${payout.id}'`],
      [['payouts', 'payouts_recorded']],
    );
    await expectNamed(apiKey, actor.accountId, 'payouts', payout.id, /differ from its newest recorded digest/);
  });

  it('a deleted payout row is named', async () => {
    const { actor, apiKey } = await merchant(100);
    const payout = executedOutput(
      await executeTool(createPayout, { amount: 8, to_address: ADDRESS_A }, { runtime, actor }),
    );
    await outside(
      [`delete from transfers where source_id = '${payout.id}'`, `delete from payouts where id = '${payout.id}'`],
      [['payouts', 'payouts_recorded']],
    );
    await expectNamed(apiKey, actor.accountId, 'payouts', payout.id, /missing: deleted outside plainpay/);
  });

  it("a queued transfer's recipient changed is named: plainpay's own batch would pay it", async () => {
    const { actor, apiKey } = await merchant(100);
    const payout = executedOutput(
      await executeTool(createPayout, { amount: 9, to_address: ADDRESS_A }, { runtime, actor }),
    );
    const transfer = await runtime.db
      .selectFrom('transfers')
      .select('id')
      .where('source_id', '=', payout.id)
      .executeTakeFirstOrThrow();
    await outside([`update transfers set recipient = '${ADDRESS_B}' where id = '${transfer.id}'`]);
    await expectNamed(apiKey, actor.accountId, 'transfers', transfer.id, /session that is not plainpay's/);
  });

  it('every table verify reads has both triggers, and no other table has them', async () => {
    const triggers = await sql<{ table_name: string; trigger_name: string }>`
      select c.relname as table_name, t.tgname as trigger_name
        from pg_trigger t join pg_class c on c.oid = t.tgrelid
       where t.tgname like '%\_recorded' or t.tgname like '%\_not\_truncated'`.execute(runtime.db);
    const tablesWith = (suffix: string) =>
      triggers.rows
        .filter((row) => row.trigger_name === `${row.table_name}${suffix}`)
        .map((row) => row.table_name)
        .sort();
    expect(tablesWith('_recorded')).toEqual([...MONEY_TABLES].sort());
    expect(tablesWith('_not_truncated')).toEqual([...MONEY_TABLES, 'money_row_digests'].sort());
  });

  it('TRUNCATE of a money table or of the digests is refused, even with the row triggers disabled', async () => {
    for (const table of ['money_row_digests', 'payouts', 'ledger_entries', 'transfers', 'settlement_batches']) {
      await expect(outside([`truncate ${table} cascade`]), table).rejects.toThrow(/TRUNCATE of .* is not allowed/);
    }
  });

  it('ledger entries doubled, with the append-only trigger dropped first, are named', async () => {
    const { actor, apiKey } = await merchant(100);
    const entry = await runtime.db
      .selectFrom('ledger_entries as e')
      .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
      .select(['e.id', 'e.posting_id'])
      .where('a.account_id', '=', actor.accountId)
      .orderBy('e.id')
      .executeTakeFirstOrThrow();
    // Every entry of the posting doubled: it still balances, and the balance is twice as large.
    await outside(
      [`update ledger_entries set amount_minor = amount_minor * 2 where posting_id = ${entry.posting_id}`],
      [['ledger_entries', 'ledger_entries_append_only']],
    );
    await expectNamed(apiKey, actor.accountId, 'ledger_entries', String(entry.id), /not plainpay's/);
  });

  it('ledger entries added with every trigger disabled are named as unrecorded', async () => {
    const { actor, apiKey } = await merchant(100);
    const entries = await runtime.db
      .selectFrom('ledger_entries as e')
      .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
      .select(['e.posting_id'])
      .where('a.account_id', '=', actor.accountId)
      .execute();
    const postingId = entries[0]!.posting_id;
    await outside(
      [
        `insert into ledger_entries (posting_id, account_id, asset, amount_minor)
         select posting_id, account_id, asset, amount_minor from ledger_entries where posting_id = ${postingId}`,
      ],
      [['ledger_entries', 'user']],
    );
    const added = await runtime.db
      .selectFrom('ledger_entries')
      .select('id')
      .where('posting_id', '=', postingId)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    const report = await verifyActionLog(runtime.db, { accountId: actor.accountId });
    expect(report.firstBroken).toMatchObject({ table: 'ledger_entries' });
    expect(report.firstBroken!.reason).toMatch(/no digest records this row/);
    expect([String(added.id), String(Number(added.id) - 1)]).toContain(report.firstBroken!.rowId);
    expect((await apiVerify(apiKey)).broken).toMatchObject({ table: 'ledger_entries' });
  });

  it("a payment's amount changed is named", async () => {
    const { actor, apiKey } = await merchant();
    const paymentId = await settledPayment(runtime, actor);
    await outside([`update payments set amount_minor = amount_minor * 10 where id = '${paymentId}'`]);
    await expectNamed(apiKey, actor.accountId, 'payments', paymentId, /not plainpay's/);
  });

  it("a refund's amount changed with the recording trigger disabled is named", async () => {
    const { actor, apiKey } = await merchant();
    const paymentId = await settledPayment(runtime, actor);
    const refund = executedOutput(
      await executeTool(refundPayment, { payment_id: paymentId, amount: 10 }, { runtime, actor }),
    );
    await outside([`update refunds set amount_minor = 1 where id = '${refund.id}'`], [['refunds', 'refunds_recorded']]);
    await expectNamed(apiKey, actor.accountId, 'refunds', refund.id, /differ from its newest recorded digest/);
  });
});

describe('audit verify finds a log cut back', () => {
  async function appendEntries(accountId: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      await runtime.db.transaction().execute(async (trx) => {
        await lockAccountActions(trx, accountId);
        await appendActionLog(trx, {
          accountId,
          livemode: false,
          entryType: 'action.executed',
          actionId: null,
          payload: { note: i },
          at: runtime.clock.now(),
        });
      });
    }
  }

  /** Deletes the account's last two entries and sets its head back to the one before them. */
  async function cutLastTwo(accountId: string): Promise<void> {
    const rows = await runtime.db
      .selectFrom('action_log')
      .select(['seq', 'hash'])
      .where('account_id', '=', accountId)
      .orderBy('seq', 'desc')
      .limit(3)
      .execute();
    const [last, second, kept] = rows;
    await outside(
      [
        `delete from action_log where seq in (${last!.seq}, ${second!.seq})`,
        `update action_log_heads set last_seq = ${kept!.seq}, last_hash = '${kept!.hash}' where account_id = '${accountId}'`,
      ],
      [['action_log', 'action_log_append_only']],
    );
  }

  it('the last two entries deleted and the head reset, past a recorded verification, are named', async () => {
    const { actor, apiKey } = await merchant();
    await appendEntries(actor.accountId, 5);
    // A verification (the API's) records the head it reached.
    expect((await apiVerify(apiKey)).ok).toBe(true);
    await cutLastTwo(actor.accountId);

    const report = await verifyActionLog(runtime.db, { accountId: actor.accountId });
    expect(report.ok).toBe(false);
    expect(report.firstBroken).toMatchObject({ table: 'action_log_heads', rowId: actor.accountId });
    expect(report.firstBroken!.reason).toMatch(/newest rows of the account are missing: the verification of/);
    const api = await apiVerify(apiKey);
    expect(api.broken).toMatchObject({ table: 'action_log_heads', row_id: actor.accountId });
    // A broken verification does not move the recorded head back: it stays broken.
    expect((await apiVerify(apiKey)).ok).toBe(false);
  });

  it('against a checkpoint kept outside the database, even with the recorded verifications removed', async () => {
    const { actor } = await merchant();
    await appendEntries(actor.accountId, 4);
    const checkpoint = await takeCheckpoint(actor.accountId);
    await cutLastTwo(actor.accountId);
    await outside([`delete from audit_heads_seen where account_id = '${actor.accountId}'`]);

    // Without the checkpoint, the cut chain is intact in itself.
    expect((await verifyActionLog(runtime.db, { accountId: actor.accountId })).ok).toBe(true);
    const report = await verifyActionLog(runtime.db, { accountId: actor.accountId, checkpoint: checkpoint.heads });
    expect(report.firstBroken).toMatchObject({ table: 'action_log_heads', rowId: actor.accountId });
    expect(report.firstBroken!.reason).toMatch(/the checkpoint saw the log through/);
    const cli = await cliVerify(['--checkpoint', JSON.stringify(checkpoint)]);
    expect(cli.code).toBe(1);
  });

  /** `plainpay audit checkpoint`'s output, for this account's head (the others' are left out). */
  async function takeCheckpoint(accountId: string) {
    let stdout = '';
    const out = { stdout: (text: string) => (stdout += text), stderr: () => {} } as unknown as CliOutput;
    const code = await auditCheckpoint.parse([])({ db: runtime.db, clock: runtime.clock } as never, out);
    if (code !== 0) {
      // Another test's tampering breaks the whole-database verification: this account's head then.
      const report = await verifyActionLog(runtime.db, { accountId });
      return { object: 'audit_checkpoint', taken_at: '', heads: { [accountId]: report.heads[accountId]! } };
    }
    const checkpoint = JSON.parse(stdout);
    return { ...checkpoint, heads: { [accountId]: checkpoint.heads[accountId] } };
  }
});

describe('verification while serving', () => {
  it('the worker verifies at start: a broken row is logged as an error and plainpay_audit_broken is 1', async () => {
    const { actor } = await merchant();
    const paymentId = await settledPayment(runtime, actor);
    await outside([`update payments set amount_minor = 1 where id = '${paymentId}'`]);
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const token = 'audit-worker-metrics-token-0123456789';
    const worker = await testRuntime({ METRICS_TOKEN: token }, { logger: createLogger('info', sink) });
    const stop = auditVerificationJob(worker);
    try {
      while (!lines.some((l) => /^audit verification failed/.test(l.msg))) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await stop();
    }
    const failure = lines.find((l) => /^audit verification failed/.test(l.msg))!;
    expect(failure.level).toBe(50);
    const metrics = await (await testApp(worker)).inject({
      method: 'GET',
      url: '/metrics',
      headers: bearer(token),
    });
    expect(metrics.body).toMatch(/^plainpay_audit_broken 1$/m);
  });
});

describe.skipIf(!isPostgres)("plainpay's sessions on Postgres", () => {
  it("are marked as the service's, keeping the startup options of DATABASE_URL", async () => {
    const url = new URL((await fileDatabaseUrl())!);
    url.searchParams.set('options', '-c statement_timeout=12345');
    const handle = await connectDatabase({ kind: 'postgres', url: url.toString() });
    try {
      const { rows } = await sql<{ session: string; timeout: string }>`
        select current_setting('plainpay.session', true) as session, current_setting('statement_timeout') as timeout`.execute(
        handle.db,
      );
      expect(rows[0]).toEqual({ session: 'service', timeout: '12345ms' });
    } finally {
      await handle.close();
    }
  });
});
