import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { checkCollectionInvariant } from '../../src/payments/rails/collections.ts';
import pg from 'pg';
import { inject } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { ManualClock } from '../../src/core/clock.ts';
import pino from 'pino';
import { createLogger } from '../../src/core/logger.ts';
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.ts';
import { type AppOptions, buildApp } from '../../src/http/app.ts';
import { createRuntime, type Runtime, type RuntimeOverrides } from '../../src/runtime.ts';
import { issueApiKey } from '../../src/keys/api-keys.ts';
import type { ApiKeyScope } from '../../src/domain/api-key-secret.ts';
import { describeBroken } from '../../src/audit/action-log.ts';
import { checkMoneyRows } from '../../src/audit/money-rows.ts';
import { afterFile } from './after-file.ts';
import { dropScratchDatabase } from './scratch-database.ts';

/**
 * Test harness: one migrated database per test file (a copy of the run's template: a PGlite data
 * dir, or a Postgres database), shared by every runtime the file builds. Within a file, tests
 * isolate by creating their own accounts, as real tenants are isolated.
 */
let shared: Promise<DatabaseHandle> | undefined;
let sharedDir: string | undefined;
let fileDatabase: Promise<string> | undefined;

export const isPostgres = Boolean(inject('postgresTemplate'));

/**
 * On Postgres, the URL of this file's database (created from the run's template on first use,
 * dropped after the file): what worker processes a test spawns connect to. undefined on PGlite.
 */
export function fileDatabaseUrl(): Promise<string | undefined> {
  const template = inject('postgresTemplate');
  if (!template) return Promise.resolve(undefined);
  if (!fileDatabase) {
    const name = `plainpay_test_${Date.now()}_${process.pid}_${randomBytes(3).toString('hex')}`;
    // Registered now, before anything that uses the database registers its own clean-up: those
    // run first (newest first), so every connection is closed before the drop.
    afterFile(async () => {
      await fileDatabase?.catch(() => undefined);
      fileDatabase = undefined;
      await dropScratchDatabase(template.adminUrl, name);
    });
    fileDatabase = (async () => {
      const admin = new pg.Client({ connectionString: template.adminUrl });
      await admin.connect();
      try {
        await admin.query(`create database ${name} template ${template.name}`);
      } finally {
        await admin.end();
      }
      const url = new URL(template.adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    })();
  }
  return fileDatabase;
}

export function testDatabase(): Promise<DatabaseHandle> {
  if (!shared) {
    if (isPostgres) {
      shared = fileDatabaseUrl().then((url) => connectDatabase({ kind: 'postgres', url: url! }));
    } else {
      const template = inject('pgliteTemplateDir');
      if (!template) throw new Error('global setup did not provide a database');
      // Beside the template, in the run's directory (test/global-setup.ts): in memory where the
      // machine allows, and removed with the run's even if this file never reaches its clean-up.
      sharedDir = mkdtempSync(join(dirname(template), 'file-'));
      const dataDir = join(sharedDir, 'pgdata');
      cpSync(template, dataDir, { recursive: true });
      shared = connectDatabase({ kind: 'pglite', dataDir });
    }
    afterFile(async () => {
      try {
        await (await shared)?.close();
      } finally {
        shared = undefined;
        if (sharedDir) rmSync(sharedDir, { recursive: true, force: true });
      }
    });
  }
  return shared;
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    PLAINPAY_DATA_DIR: join(tmpdir(), 'plainpay-test-data'),
    PLAINPAY_MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    DEMO_ACCOUNT: '0',
    // A file drives one key back to back, as fast as the machine runs (a faster CI machine passed
    // the production default of 100 a second); the limit has tests of its own, which set it.
    RATE_LIMIT_PER_SECOND: '1000000',
    ...env,
  });
}

/**
 * Test runtimes are quiet unless TEST_LOG_LEVEL says otherwise (CI sets `error`): a 500 in a test
 * then shows its cause on stderr, not only "An internal error occurred".
 */
export function testLogger() {
  return createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', pino.destination(2));
}

let tamperingOnPurpose = false;

/** For a file that edits money rows outside plainpay on purpose: the end-of-file money check is skipped. */
export function tamperingWithMoneyRowsOnPurpose(): void {
  tamperingOnPurpose = true;
}

export interface TestRuntime extends Runtime {
  clock: ManualClock;
}

export async function testRuntime(
  env: Record<string, string> = {},
  overrides: RuntimeOverrides = {},
): Promise<TestRuntime> {
  const database = await testDatabase();
  const runtime = await createRuntime(testConfig(env), {
    database,
    migrate: false,
    clock: new ManualClock(),
    logger: testLogger(),
    ...overrides,
  });
  afterFile(async () => {
    // The collection invariant (docs/rails.md) over everything the file did, before the database goes.
    const problems = await checkCollectionInvariant(runtime.db).catch(() => [] as string[]);
    // And every money row as plainpay wrote it (docs/operations.md, "Tamper evidence"): a money
    // write from a session that is not plainpay's, or one its recording trigger missed, is named.
    const broken = tamperingOnPurpose
      ? undefined
      : await checkMoneyRows(runtime.db, {}).then(
          (check) => check.broken,
          () => undefined,
        );
    await runtime.close();
    if (problems.length > 0) throw new Error(`collection invariant broken:\n${problems.join('\n')}`);
    if (broken) throw new Error(`money rows not as plainpay wrote them: ${describeBroken(broken)}`);
  });
  return runtime as TestRuntime;
}

export async function testApp(runtime: Runtime, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await buildApp(runtime, options);
  afterFile(() => app.close());
  return app;
}

export interface TestAccount {
  accountId: string;
  apiKey: string;
  webhookSecret: string;
}

export async function testAccount(
  runtime: Runtime,
  options: { livemode?: boolean; name?: string } = {},
): Promise<TestAccount> {
  const created = await createAccount(runtime.db, runtime.secretBox, {
    name: options.name ?? 'Test merchant',
    livemode: options.livemode ?? false,
  });
  return { accountId: created.account, apiKey: created.api_key, webhookSecret: created.webhook_secret };
}

export async function extraKey(
  runtime: Runtime,
  accountId: string,
  options: { livemode?: boolean; scopes?: ApiKeyScope[] } = {},
): Promise<string> {
  const key = await issueApiKey(runtime.db, { accountId, livemode: options.livemode ?? false, scopes: options.scopes });
  return key.secret;
}

export function bearer(key: string): { authorization: string } {
  return { authorization: `Bearer ${key}` };
}
