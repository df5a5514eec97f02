import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { dropScratchDatabase } from './support/scratch-database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set when DATABASE_URL is: a fresh, migrated database for this run. */
    testDatabaseUrl: string | undefined;
    /** Otherwise: a migrated PGlite data dir each test file copies (opening a copy is ~10x faster than initdb). */
    pgliteTemplateDir: string | undefined;
  }
}

/**
 * Migrates once per run (STACK.md: do not open a fresh PGlite per test). On Postgres, one
 * database per run, dropped at the end; tests isolate by creating their own accounts.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) {
    const name = `plainpay_test_${Date.now()}_${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const handle = await connectDatabase({ kind: 'postgres', url: url.toString() }, { poolSize: 1 });
    await migrateToLatest(handle.db);
    await handle.close();
    project.provide('testDatabaseUrl', url.toString());
    project.provide('pgliteTemplateDir', undefined);
    return () => dropScratchDatabase(adminUrl, name);
  }
  const root = mkdtempSync(join(tmpdir(), 'plainpay-test-template-'));
  const dataDir = join(root, 'pgdata');
  const handle = await connectDatabase({ kind: 'pglite', dataDir });
  await migrateToLatest(handle.db);
  await handle.close();
  project.provide('testDatabaseUrl', undefined);
  project.provide('pgliteTemplateDir', dataDir);
  return async () => rmSync(root, { recursive: true, force: true });
}
