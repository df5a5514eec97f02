// What `plainpay serve` writes when its stdout is not a terminal (LOG_FORMAT, docs/configuration.md):
// JSON lines only on stdout, the banner on stderr; and with LOG_FORMAT=pretty, pino-pretty's lines.
// Neither stream is a terminal here, so the banner never carries the demo key: log drivers keep both.
// The look on a real terminal (colours, the banner on stdout) needs a pseudo-terminal and was
// checked by hand (tmux).

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childEnv, freePort } from './support/server.ts';

/** The banner README.md shows, from its first line to its last. */
function readmeBanner(): string[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const lines = readme.split('\n');
  const first = lines.indexOf('plainpay is running (role: all, database: pglite)');
  return lines.slice(first, lines.indexOf('Press Ctrl-C to stop.', first) + 1);
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  /** What varies from one start to the next, as README.md writes it. */
  placeholders: (text: string) => string;
}

/** Starts serve with stdout and stderr piped, pings it once, stops it with SIGINT. */
async function serveOnce(extra: Record<string, string>): Promise<Run> {
  const dataDir = mkdtempSync(join(tmpdir(), 'plainpay-terminal-'));
  dirs.push(dataDir);
  const port = await freePort();
  const checkoutPort = await freePort();
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], {
    env: childEnv(dataDir, {
      PORT: String(port),
      CHECKOUT_PORT: String(checkoutPort),
      LOG_LEVEL: 'info',
      ...extra,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stdout}\n${stderr}`)), 60_000);
    const check = (): void => {
      if (/Demo key: /.test(stdout + stderr)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${stdout}\n${stderr}`));
    });
  });
  const demo = JSON.parse(readFileSync(join(dataDir, 'demo-account.json'), 'utf8')) as { api_key: string };
  const ping = await fetch(`http://127.0.0.1:${port}/v1/ping`, {
    headers: { authorization: `Bearer ${demo.api_key}` },
  });
  expect(ping.status).toBe(200);
  child.kill('SIGINT');
  const code = await exited;
  const placeholders = (text: string): string =>
    text
      .replaceAll(dataDir, '…/.plainpay')
      .replaceAll(`localhost:${port}`, 'localhost:3000')
      .replaceAll(`localhost:${checkoutPort}`, 'localhost:3001')
      .replace(/acct_\w+/g, 'acct_…')
      .replace(/sk_test_\w+/g, 'sk_test_…');
  return { stdout, stderr, code, placeholders };
}

describe('plainpay serve into a pipe', () => {
  it('writes JSON lines only on stdout, the banner on stderr, and a "stopped" line at Ctrl-C', async () => {
    const run = await serveOnce({});
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter((line) => line !== '');
    const logs = lines.map((line) => JSON.parse(line) as { msg: string; level: number; [key: string]: unknown });
    const messages = logs.map((log) => log.msg);
    expect(messages).toContain('plainpay is running');
    expect(logs.find((log) => log.msg === 'request')).toMatchObject({ method: 'GET', url: '/v1/ping', status: 200 });
    expect(messages.at(-1)).toBe('stopped');
    // The demo key is for the person who started it, not for the log stream: stderr is shipped too.
    expect(run.stdout).not.toMatch(/sk_test_[0-9A-Za-z]{8}/);
    expect(run.stderr).not.toMatch(/sk_test_[0-9A-Za-z]{8}/);
    expect(run.stderr).toMatch(/^plainpay is running \(role: all, database: pglite\)$/m);
    expect(run.placeholders(run.stderr)).toMatch(
      /^ {2}Demo key: {5}not printed \(output is not a terminal\): it is in …\/\.plainpay\/demo-account\.json$/m,
    );
  }, 90_000);

  it('LOG_FORMAT=pretty writes pino-pretty lines and the banner on stdout, and "stopped" plain', async () => {
    const run = await serveOnce({ LOG_FORMAT: 'pretty' });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('{"level"');
    expect(run.stdout).toMatch(/^plainpay is running \(role: all, database: pglite\)$/m);
    expect(run.stdout).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: request: GET \/v1\/ping 200 \d+ ms$/m);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('stopped');
    expect(run.stdout).not.toMatch(/sk_test_[0-9A-Za-z]{8}/);
    // README.md shows the banner as it appears on a terminal; into a pipe the key lines give way
    // to the one naming its file.
    const keyLines = (line: string): boolean => !/^ {2}(Demo key|Try):/.test(line);
    const expected = readmeBanner().filter(keyLines);
    const banner = run.placeholders(run.stdout).split('\n');
    const first = banner.indexOf(expected[0]!);
    expect(first).toBeGreaterThanOrEqual(0);
    expect(banner.slice(first, first + expected.length + 1).filter(keyLines)).toEqual(expected);
    expect(banner).toContain(
      '  Demo key:     not printed (output is not a terminal): it is in …/.plainpay/demo-account.json',
    );
  }, 90_000);
});
