// `plainpay reconcile` as the operator runs it (docs/reconciliation.md): on the embedded database
// the CLI opened itself, and beside a running serve, where it runs inside serve. Its output is the
// run alone: the runtime it makes logs to stderr.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childEnv, startServer } from './support/server.ts';

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

describe('plainpay reconcile', () => {
  it('runs on the embedded database the CLI opens, and prints only the run as JSON', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-reconcile-'));
    dirs.push(dataDir);
    const before = yesterday();
    const { stdout } = await run(process.execPath, [CLI, 'reconcile', '--json'], { env: childEnv(dataDir) });
    const after = yesterday();
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({
      object: 'reconciliation_run',
      trigger: 'cli',
      status: 'completed',
      differences: 0,
      lines: [],
    });
    // The CLI's yesterday: the day before it ran (the run may cross midnight).
    expect([before, after]).toContain(report.day);
  }, 90_000);

  it('runs inside a running serve on the embedded database, stored beside its runs', async () => {
    const server = await startServer();
    try {
      const { stdout } = await run(process.execPath, [CLI, 'reconcile', '--date', '2026-01-15', '--json'], {
        env: childEnv(server.dataDir),
      });
      // Serve holds the embedded database: the command ran inside it (else it would exit 69).
      expect(JSON.parse(stdout)).toMatchObject({ object: 'reconciliation_run', day: '2026-01-15', trigger: 'cli' });
    } finally {
      await server.stop();
    }
  }, 90_000);
});
