// `plainpay serve --role …` as a real child process, as an operator runs it: a fault that kills a
// process (an 'error' event nobody listens to) shows here as an exit, which an in-process app would
// hide or take the test runner down with. Its JSON log lines (stdout) and stderr are kept.

import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../../bin/plainpay.mjs', import.meta.url));

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface ServiceProcess {
  role: string;
  child: ChildProcess;
  /** Resolves once it printed "plainpay is running"; rejects if it exits first. */
  running: Promise<void>;
  exited: Promise<void>;
  /** Its pino lines, parsed. */
  logs: LogLine[];
  stdout: string[];
  stderr: string[];
  /** Whether it has exited (for any reason). */
  hasExited(): boolean;
  /** SIGTERM, then SIGKILL if it has not exited within 15 s. */
  stop(): Promise<void>;
}

export function spawnService(role: 'api' | 'worker' | 'all', env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [CLI, 'serve', '--role', role], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  let done = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      done = true;
      resolve();
    }),
  );
  let signalRunning!: () => void;
  const running = new Promise<void>((resolve, reject) => {
    signalRunning = resolve;
    void exited.then(() =>
      reject(new Error(`plainpay serve --role ${role} exited before running:\n${stderr.join('\n')}`)),
    );
  });
  running.catch(() => {});
  createInterface({ input: child.stdout! }).on('line', (line) => {
    stdout.push(line);
    if (line.startsWith('plainpay is running')) signalRunning();
    if (line.startsWith('{')) {
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        // not a log line
      }
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderr.push(line);
    // The banner goes to stderr when stdout carries JSON logs (LOG_FORMAT).
    if (line.startsWith('plainpay is running')) signalRunning();
  });
  return {
    role,
    child,
    running,
    exited,
    logs,
    stdout,
    stderr,
    hasExited: () => done,
    async stop() {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
