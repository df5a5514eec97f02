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
    /**
     * Set when DATABASE_URL is: that URL (the admin connection) and the name of a migrated database
     * nobody connects to, which each test file copies into a database of its own.
     */
    postgresTemplate: { adminUrl: string; name: string } | undefined;
    /** Otherwise: a migrated PGlite data dir each test file copies (opening a copy is ~10x faster than initdb). */
    pgliteTemplateDir: string | undefined;
  }
}

/**
 * Migrates once per run (STACK.md: do not open a fresh PGlite per test) into a template each test
 * file copies: a PGlite data dir, or on Postgres a template database (CREATE DATABASE … TEMPLATE).
 * One database per file on both backends: workers and jobs settle or expire every due row of the
 * database they run on, as in production, so files sharing one would act on each other's rows.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) {
    const name = `plainpay_template_${Date.now()}_${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const handle = await connectDatabase({ kind: 'postgres', url: url.toString() }, { poolSize: 1 });
    await migrateToLatest(handle.db);
    await handle.close();
    project.provide('postgresTemplate', { adminUrl, name });
    project.provide('pgliteTemplateDir', undefined);
    return () => dropScratchDatabase(adminUrl, name);
  }
  const root = mkdtempSync(join(tmpdir(), 'plainpay-test-template-'));
  const dataDir = join(root, 'pgdata');
  const handle = await connectDatabase({ kind: 'pglite', dataDir });
  await migrateToLatest(handle.db);
  await handle.close();
  project.provide('postgresTemplate', undefined);
  project.provide('pgliteTemplateDir', dataDir);
  return async () => rmSync(root, { recursive: true, force: true });
}
