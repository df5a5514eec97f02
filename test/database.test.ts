import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, inject, it } from 'vitest';
import { connectDatabase, DataDirLockedError } from '../src/db/connect.ts';
import { migrateToLatest, readMigrations } from '../src/db/migrate.ts';
import { extraKey, fileDatabaseUrl, isPostgres, testAccount, testDatabase, testRuntime } from './support/harness.ts';

describe('database', () => {
  it('returns int8 as bigint, exactly, beyond 2^53', async () => {
    const { db } = await testDatabase();
    const big = 9_007_199_254_740_993n; // 2^53 + 1: a float would round it
    const row = await sql<{ v: bigint; n: string }>`select ${big}::int8 as v, 12.345::numeric as n`.execute(db);
    expect(row.rows[0]!.v).toBe(big);
    expect(row.rows[0]!.n).toBe('12.345');
  });

  it('has applied every migration, and applying again is a no-op', async () => {
    const { db } = await testDatabase();
    const applied = await sql<{ version: number }>`select version from schema_migrations order by version`.execute(db);
    expect(applied.rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version));
    expect(await migrateToLatest(db)).toEqual([]);
  });

  it('refuses a second open of one PGlite data dir with a clear error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-lock-'));
    const first = await connectDatabase({ kind: 'pglite', dataDir: join(dir, 'pgdata') });
    try {
      await expect(connectDatabase({ kind: 'pglite', dataDir: join(dir, 'pgdata') })).rejects.toBeInstanceOf(
        DataDirLockedError,
      );
      // A second process is refused too.
      const script = `import('${new URL('../src/db/connect.ts', import.meta.url).pathname}').then(m => m.connectDatabase({ kind: 'pglite', dataDir: '${join(dir, 'pgdata')}' })).then(() => process.exit(0), e => { console.error(e.message); process.exit(3); })`;
      let stderr = '';
      try {
        execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'pipe' });
      } catch (error) {
        stderr = String((error as { stderr: Buffer }).stderr);
        expect((error as { status: number }).status).toBe(3);
      }
      expect(stderr).toMatch(/already open in process \d+/);
    } finally {
      await first.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes over a lock left by a killed run, even one holding this process id (pid 1 in a container)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plainpay-lock-'));
    const dataDir = join(dir, 'pgdata');
    try {
      for (const stale of [String(process.pid), '']) {
        writeFileSync(`${dataDir}.lock`, stale);
        const handle = await connectDatabase({ kind: 'pglite', dataDir });
        expect(readFileSync(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
        await handle.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!isPostgres)('gives this test file a database of its own on Postgres, a copy of the template', async () => {
    // Workers and jobs act on every due row of their database: files sharing one acted on each
    // other's payments (a fuzz run blamed a rejected request for another file's settlement).
    const { db } = await testDatabase();
    const current = await sql<{ name: string }>`select current_database() as name`.execute(db);
    const name = current.rows[0]!.name;
    expect(new URL((await fileDatabaseUrl())!).pathname).toBe(`/${name}`);
    expect(name).not.toBe(inject('postgresTemplate')!.name);
    expect(name).toMatch(new RegExp(`^plainpay_test_\\d+_${process.pid}_`));
  });

  it('holds no API key secret or webhook secret in clear in a full dump', async () => {
    const runtime = await testRuntime();
    const merchant = await testAccount(runtime);
    const another = await extraKey(runtime, merchant.accountId);
    const url = await fileDatabaseUrl();
    let dump: string;
    if (url) {
      dump = execFileSync('pg_dump', ['--data-only', url], { maxBuffer: 256 * 1024 * 1024 }).toString('latin1');
    } else {
      const { db } = await testDatabase();
      // PGlite: read every row of every table as text, which is what a dump holds.
      const tables = await sql<{ t: string }>`select tablename as t from pg_tables where schemaname = 'public'`.execute(
        db,
      );
      const parts: string[] = [];
      for (const { t } of tables.rows) {
        const rows = await sql<{ r: string }>`select t::text as r from ${sql.table(t)} t`.execute(db);
        parts.push(...rows.rows.map((r) => r.r));
      }
      dump = parts.join('\n');
    }
    expect(dump).toContain(merchant.accountId); // the dump did read our rows
    for (const secret of [merchant.apiKey, another, merchant.webhookSecret, merchant.webhookSecret.slice(6)]) {
      expect(dump).not.toContain(secret);
    }
  });
});
