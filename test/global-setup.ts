import { mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
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
    /**
     * Otherwise: a migrated PGlite data dir each test file copies (opening a copy is ~10x faster
     * than initdb). Test files put their copies beside it (test/support/harness.ts), in a
     * directory of this run's that the teardown removes.
     */
    pgliteTemplateDir: string | undefined;
  }
}

type Template =
  | { kind: 'postgres'; adminUrl: string; name: string }
  | { kind: 'pglite'; root: string; dataDir: string };

interface SharedTemplate {
  ready: Promise<Template>;
  users: number;
}

/**
 * The projects of vitest.config.ts that use a database each run this setup, in the one vitest
 * process; they share one template, made by the first and removed after the last is done. A
 * module-level variable would not do: each project loads this file as a module of its own.
 */
const SHARED = Symbol.for('plainpay.test.database-template');
const registry = globalThis as typeof globalThis & { [SHARED]?: SharedTemplate };

/**
 * Migrates once per run (STACK.md: do not open a fresh PGlite per test) into a template each test
 * file copies: a PGlite data dir, or on Postgres a template database (CREATE DATABASE … TEMPLATE).
 * One database per file on both backends: workers and jobs settle or expire every due row of the
 * database they run on, as in production, so files sharing one would act on each other's rows.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let shared = registry[SHARED];
  if (!shared) {
    shared = { ready: makeTemplate(), users: 0 };
    registry[SHARED] = shared;
  }
  shared.users += 1;
  const template = await shared.ready;
  project.provide('postgresTemplate', template.kind === 'postgres' ? template : undefined);
  project.provide('pgliteTemplateDir', template.kind === 'pglite' ? template.dataDir : undefined);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete registry[SHARED];
    await removeTemplate(template);
  };
}

async function makeTemplate(): Promise<Template> {
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
    return { kind: 'postgres', adminUrl, name };
  }
  const parent = scratchParent();
  removeRootsOfDeadRuns(parent);
  const root = mkdtempSync(join(parent, `${RUN_ROOT_PREFIX}${process.pid}-`));
  const dataDir = join(root, 'pgdata');
  const handle = await connectDatabase({ kind: 'pglite', dataDir });
  await migrateToLatest(handle.db);
  await handle.close();
  return { kind: 'pglite', root, dataDir };
}

async function removeTemplate(template: Template): Promise<void> {
  if (template.kind === 'postgres') await dropScratchDatabase(template.adminUrl, template.name);
  else rmSync(template.root, { recursive: true, force: true });
}

const RUN_ROOT_PREFIX = 'plainpay-test-run-';

/**
 * Where the template and every file's copy of it live: /dev/shm when it is a tmpfs with room
 * to spare, else the temp dir. Each test file writes a 41 MB copy and PGlite then writes to it;
 * on disk that copy alone takes 0.3–1.2 s per file on these machines, in memory ~50 ms. Docker's
 * default /dev/shm is 64 MB, too small for a template and two copies: then the disk it is.
 */
function scratchParent(): string {
  const MIN_FREE_BYTES = 1024 ** 3;
  try {
    const fs = statfsSync('/dev/shm');
    if (fs.bavail * fs.bsize >= MIN_FREE_BYTES) return '/dev/shm';
  } catch {
    // No /dev/shm (macOS): the temp dir.
  }
  return tmpdir();
}

/**
 * A run killed before its teardown leaves its directory behind, in memory when under /dev/shm.
 * The next run removes those whose vitest process is gone; other runs going on at the same time
 * (other checkouts on a shared machine) keep theirs.
 */
function removeRootsOfDeadRuns(parent: string): void {
  for (const entry of readdirSync(parent)) {
    if (!entry.startsWith(RUN_ROOT_PREFIX)) continue;
    const pid = Number.parseInt(entry.slice(RUN_ROOT_PREFIX.length), 10);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    rmSync(join(parent, entry), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
