// A `serve --role worker` process settles payments, so it is where the paid → settled histogram
// fills: it serves GET /metrics on PORT when METRICS_TOKEN is set (a worker serves nothing else).

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childEnv, freePort } from './support/server.ts';

const TOKEN = 'worker-metrics-token-0123456789';
const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-worker-metrics-'));
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe('metrics of a worker process', () => {
  it('serves /metrics on PORT behind the token, with the paid → settled histogram', async () => {
    const port = await freePort();
    child = spawn(process.execPath, [CLI, 'serve', '--role', 'worker'], {
      env: childEnv(dataDir, { PORT: String(port), METRICS_TOKEN: TOKEN }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    // A ceiling only a hang reaches: the state waited for is the line saying it listens.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker did not start:\n${output}`)), 90_000);
      child!.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker exited with ${code}:\n${output}`));
      });
      // The banner goes to stderr when stdout carries JSON logs (LOG_FORMAT).
      for (const stream of [child!.stdout!, child!.stderr!]) {
        stream.on('data', () => {
          if (output.includes('Metrics:')) {
            clearTimeout(timer);
            resolve();
          }
        });
      }
    });
    const url = `http://127.0.0.1:${port}/metrics`;
    const refused = await fetch(url);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const scraped = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scraped.status).toBe(200);
    const body = await scraped.text();
    expect(body).toContain('# TYPE plainpay_payment_paid_to_settled_seconds histogram');
    expect(body).toContain('plainpay_transfer_queue_depth');
    // Nothing else lives on a worker's port.
    expect((await fetch(`http://127.0.0.1:${port}/v1/ping`)).status).toBe(404);
  }, 120_000);
});
